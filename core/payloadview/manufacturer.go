package payloadview

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Manufacturer returns the manufacturer's name the payload declares
// (fields.general.manufacturer: an object's name, or a plain string),
// trimmed; empty when it declares none.
func Manufacturer(payload []byte) string {
	var p struct {
		Fields struct {
			General struct {
				Manufacturer json.RawMessage `json:"manufacturer"`
			} `json:"general"`
		} `json:"fields"`
	}
	if err := json.NewDecoder(bytes.NewReader(payload)).Decode(&p); err != nil {
		return ""
	}
	raw := p.Fields.General.Manufacturer
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return strings.TrimSpace(name)
	}
	var obj struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return strings.TrimSpace(obj.Name)
	}
	return ""
}
