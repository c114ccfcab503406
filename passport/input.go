package passport

import (
	"context"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// The lengths of what clients name.
const (
	// MaxNameChars bounds a document's, a rule package's or a battery
	// product's name, in characters.
	MaxNameChars = 200
	// MaxSKUChars bounds a battery product's SKU, in characters.
	MaxSKUChars = 100
	// MinWebhookSecretChars and MaxWebhookSecretChars bound a webhook
	// endpoint's signing secret.
	MinWebhookSecretChars = 16
	MaxWebhookSecretChars = 512
	// MaxActorChars bounds the actor a platform-appended event names.
	MaxActorChars = 200
)

var (
	aggregateTypePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
	eventTypePattern     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)
)

// CheckName trims a required name and checks its length in characters; the
// error names field.
func CheckName(field, value string, maxChars int) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" || utf8.RuneCountInString(v) > maxChars {
		return "", errcode.Invalid(field, "is required, at most %d characters", maxChars)
	}
	return v, nil
}

// CheckAggregateType checks the aggregate type of an appended event.
func CheckAggregateType(field, s string) error {
	if !aggregateTypePattern.MatchString(s) {
		return errcode.Invalid(field, "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter")
	}
	return nil
}

// CheckEventType checks the type of an appended event.
func CheckEventType(field, s string) error {
	if !eventTypePattern.MatchString(s) {
		return errcode.Invalid(field, "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter")
	}
	return nil
}

// CheckEventTypeFilter checks what a webhook subscription listens to: an
// event type, or "*" for every one.
func CheckEventTypeFilter(field, s string) error {
	if s != "*" && !eventTypePattern.MatchString(s) {
		return errcode.Invalid(field, "must be an event type or '*' for all")
	}
	return nil
}

// CheckWebhookSecret checks the length of a webhook endpoint's signing secret.
func CheckWebhookSecret(field, s string) error {
	if len(s) < MinWebhookSecretChars || len(s) > MaxWebhookSecretChars {
		return errcode.Invalid(field, "must be %d to %d characters", MinWebhookSecretChars, MaxWebhookSecretChars)
	}
	return nil
}

// CreateDocument creates a document of a known kind under a checked name.
func CreateDocument(ctx context.Context, q *store.Queries, tenantID uuid.UUID, kind, name string) (bpctype.Document, error) {
	if err := CheckDocumentKind(kind); err != nil {
		return bpctype.Document{}, err
	}
	name, err := CheckName("name", name, MaxNameChars)
	if err != nil {
		return bpctype.Document{}, err
	}
	return q.CreateDocument(ctx, tenantID, kind, name)
}
