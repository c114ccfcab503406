package jobargs

import (
	"reflect"
	"sort"

	"github.com/google/uuid"
)

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

// Exampler is implemented by the args of a job type with a required field
// that is not a uuid (a format, a media type): Example returns valid args,
// tenant aside. Args whose required fields are all uuids need none.
type Exampler interface {
	Example() Args
}

// Example returns valid args of kind, tenant aside, from which the tests
// of every job type derive their payloads: the args' Example when they
// have one, else zero args whose uuid fields hold distinct fixed ids.
func Example(kind Kind) Args {
	args := kind.New()
	if e, ok := args.(Exampler); ok {
		return e.Example()
	}
	fields := jsonFields(reflect.ValueOf(args).Elem())
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names) // the same ids on every run
	n := byte(0)
	for _, name := range names {
		if f := fields[name]; name != "tenant_id" && f.Type() == reflect.TypeFor[uuid.UUID]() {
			n++
			f.Set(reflect.ValueOf(ExampleID(n)))
		}
	}
	return args
}

// ExampleID returns the fixed id n of the examples, a version 4 uuid.
func ExampleID(n byte) uuid.UUID {
	return uuid.UUID{n, n, n, n, n, n, 0x40 | n&0x0f, n, 0x80 | n&0x3f, n, n, n, n, n, n, n}
}
