package passport

// Role is what a tenant's API key may do.
type Role string

// The roles of an API key.
const (
	RoleAdmin  Role = "admin"
	RoleWriter Role = "writer"
	RoleReader Role = "reader"
)

// Roles lists the roles, strongest first.
var Roles = []Role{RoleAdmin, RoleWriter, RoleReader}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, bool) {
	for _, r := range Roles {
		if string(r) == s {
			return r, true
		}
	}
	return "", false
}
