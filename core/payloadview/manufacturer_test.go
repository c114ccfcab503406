package payloadview

import "testing"

func TestManufacturer(t *testing.T) {
	t.Parallel()
	for payload, want := range map[string]string{
		`{"fields":{"general":{"manufacturer":{"name":" Voltaris GmbH ","eori":"DE1"}}}}`: "Voltaris GmbH",
		`{"fields":{"general":{"manufacturer":"Voltaris GmbH"}}}`:                         "Voltaris GmbH",
		`{"fields":{"general":{"manufacturer":{"eori":"DE1"}}}}`:                          "",
		`{"fields":{"general":{"manufacturer":42}}}`:                                      "",
		`{"fields":{"general":{}}}`:                                                       "",
		`{"fields":[]}`:                                                                   "",
		`not json`:                                                                        "",
	} {
		if got := Manufacturer([]byte(payload)); got != want {
			t.Errorf("Manufacturer(%s) = %q, want %q", payload, got, want)
		}
	}
}
