package jobargs

import "sort"

// Kind describes a job type: its SSOT type name (the River kind), a
// sentence for the documentation, and how to make its zero args. The
// workers package's registry holds one Kind per job type; the admin API's
// enqueue validation, the OpenAPI document and the tests derive from it.
type Kind struct {
	// Name is the SSOT type name and River kind, e.g. COMPILE_PASSPORT.
	Name string
	// Summary says what a job of this type does, in one sentence.
	Summary string
	// New returns a pointer to zero args of the type.
	New func() Args
}

// KindOf describes the job type whose args are A.
func KindOf[A Args](summary string) Kind {
	var zero A
	return Kind{
		Name:    zero.Kind(),
		Summary: summary,
		New:     func() Args { return any(new(A)).(Args) },
	}
}

// Names returns the kinds' names, sorted.
func Names(kinds []Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.Name
	}
	sort.Strings(out)
	return out
}

// Find returns the kind named name.
func Find(kinds []Kind, name string) (Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}
