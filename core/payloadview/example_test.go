package payloadview_test

import (
	"fmt"

	"github.com/bpc-platform/bpc/core/payloadview"
)

func ExampleLayout() {
	payload := []byte(`{"compliance":[{"code":"ART8_RECYCLED_NICKEL","detail":"4.0 % (minimum 6 %)","field":"circularity.nickel_target_met","ok":false}],` +
		`"fields":{"circularity":{"nickel_share":{"unit":"pct","value":"4.0"}},"general":{"manufacturer":{"name":"Voltaris"},"model":"EV Pack 75"}}}`)
	v, err := payloadview.Layout(payload, 300)
	if err != nil {
		panic(err)
	}
	for _, s := range v.Sections {
		fmt.Println(s.Title)
		for _, r := range s.Rows {
			fmt.Printf("  %s: %s\n", r.Label, r.Value)
		}
	}
	for _, c := range v.Compliance {
		fmt.Println(c.Code, c.OK)
	}
	// Output:
	// General
	//   Manufacturer › Name: Voltaris
	//   Model: EV Pack 75
	// Circularity
	//   Nickel share: 4 %
	// ART8_RECYCLED_NICKEL false
}
