// Package jobargs declares the SSOT job types as River JobArgs, one file
// each: their kinds (equal to the SSOT type names), default insert options
// (queue and priority), the payload validation that the admin API and the
// workers share, and the rows a payload names (Refs). The list of job types
// is the workers package's registry.
package jobargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Queues. Webhooks have their own queue so a failing downstream can be held
// without stalling the pipeline; exports and rule tests are slow and CPU or
// disk bound, so they do not compete with the pipeline's workers either.
const (
	QueuePipeline = "pipeline"
	QueueRules    = "rules"
	QueueExports  = "exports"
	QueueWebhooks = "webhooks"
)

// Queues lists every queue the service works.
var Queues = []string{QueuePipeline, QueueRules, QueueExports, QueueWebhooks}

// SSOT priorities (SPEC §2); River's priority is the SSOT priority + 1.
const (
	PriorityCritical = 0
	PriorityHigh     = 1
	PriorityNormal   = 2
	PriorityLow      = 3
)

// RiverPriority converts an SSOT priority (0..3) to River's (1..4).
func RiverPriority(ssot int) int { return ssot + 1 }

// Args is what every job type implements.
type Args interface {
	river.JobArgs
	river.JobArgsWithInsertOpts
	// Tenant returns the tenant the job belongs to.
	Tenant() uuid.UUID
	// Validate checks the payload; errors are VALIDATION_ERROR naming the field.
	Validate() error
	// Refs returns the ids the payload names, which must exist in the tenant.
	Refs() []Ref
}

// Base carries the tenant every job payload names.
type Base struct {
	TenantID uuid.UUID `json:"tenant_id"`
}

// Tenant returns the job's tenant.
func (b Base) Tenant() uuid.UUID { return b.TenantID }

// validate checks the tenant and the ids the payload names (its Refs, in
// order): every one is required.
func (b Base) validate(refs []Ref) error {
	if err := requireUUID("tenant_id", b.TenantID); err != nil {
		return err
	}
	for _, r := range refs {
		if err := requireUUID(r.Field, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// requireUUID rejects the zero uuid for a required field.
func requireUUID(field string, id uuid.UUID) error {
	if id == uuid.Nil {
		return errcode.Invalid(field, "is required and must be a non-nil uuid")
	}
	return nil
}

func insertOpts(queue string, ssotPriority int) river.InsertOpts {
	return river.InsertOpts{Queue: queue, Priority: RiverPriority(ssotPriority)}
}

// PayloadPrefix is how a request names a field of a job's payload:
// "payload.snapshot_id".
const PayloadPrefix = "payload."

// Decode builds the args of kind from a JSON payload for tenantID and
// validates them. Unknown fields, wrong types and a payload tenant_id that
// differs from tenantID are VALIDATION_ERRORs naming the field (prefixed
// "payload.").
func Decode(kind Kind, tenantID uuid.UUID, payload json.RawMessage) (Args, error) {
	args := kind.New()
	if err := decodeFields(payload, args); err != nil {
		return nil, err
	}
	if t := args.Tenant(); t != uuid.Nil && t != tenantID {
		return nil, errcode.Invalid(PayloadPrefix+"tenant_id", "does not match the request's tenant_id")
	}
	setTenant(args, tenantID)
	if err := args.Validate(); err != nil {
		return nil, errcode.Prefixed(err, PayloadPrefix)
	}
	return args, nil
}

func setTenant(args Args, tenantID uuid.UUID) {
	v := reflect.ValueOf(args).Elem().FieldByName("Base")
	v.Set(reflect.ValueOf(Base{TenantID: tenantID}))
}

// decodeFields decodes a JSON object into the struct behind dst one field at
// a time, so that an error names the field that caused it.
func decodeFields(payload json.RawMessage, dst any) error {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		payload = []byte("{}")
	}
	raw, err := rawMembers(payload)
	if err != nil {
		return errcode.Invalid("payload", "must be a JSON object")
	}
	v := reflect.ValueOf(dst).Elem()
	fields := jsonFieldIndexes(v.Type())
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad field deterministically
	for _, key := range keys {
		index, ok := fields[key]
		if !ok {
			return errcode.Invalid(PayloadPrefix+key, "unknown field")
		}
		field := v.FieldByIndex(index)
		if err := json.Unmarshal(raw[key], field.Addr().Interface()); err != nil {
			return errcode.Invalid(PayloadPrefix+key, "%s", describeDecodeError(field.Type(), err))
		}
	}
	return nil
}

func describeDecodeError(t reflect.Type, err error) string {
	switch {
	case t == reflect.TypeOf(uuid.UUID{}):
		return "must be a uuid string"
	case t.Kind() == reflect.String:
		return "must be a string"
	case t.Kind() == reflect.Int64 || t.Kind() == reflect.Int:
		return "must be an integer"
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("must be %s", typeErr.Type)
	}
	return "has an invalid value"
}

// jsonFields maps json names to settable fields, flattening embedded structs.
func jsonFields(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	for name, index := range jsonFieldIndexes(v.Type()) {
		out[name] = v.FieldByIndex(index)
	}
	return out
}

// fieldIndexes caches jsonFieldIndexes: reflect.Type → map[string][]int.
var fieldIndexes sync.Map

// jsonFieldIndexes maps the json names of struct type t to the index
// paths of their fields, flattening embedded structs (an outer field wins
// over an embedded one of the same name declared before it). It is cached
// per type: every enqueued job's payload is decoded with it.
func jsonFieldIndexes(t reflect.Type) map[string][]int {
	if m, ok := fieldIndexes.Load(t); ok {
		return m.(map[string][]int)
	}
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, index := range jsonFieldIndexes(f.Type) {
				out[k] = append([]int{i}, index...)
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = []int{i}
	}
	fieldIndexes.Store(t, out)
	return out
}
