package passport_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

func validIssuer() passport.IssuerInput {
	site := "https://voltaris.example"
	return passport.IssuerInput{LegalName: "Voltaris Battery Systems GmbH", Country: "DE", RegistrationID: "DE123456789012345", Website: &site}
}

func TestIssuerValidation(t *testing.T) {
	t.Parallel()
	require.NoError(t, validIssuer().Validate())
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name, field string
		change      func(*passport.IssuerInput)
	}{
		{"empty legal name", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "" }},
		{"blank legal name", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "   " }},
		{"huge legal name", "legal_name", func(in *passport.IssuerInput) { in.LegalName = strings.Repeat("é", 201) }},
		{"line break", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "Voltaris\nGmbH" }},
		{"NUL", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "Voltaris\x00" }},
		{"bidi override", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "Voltaris \u202eHbmG" }},
		{"invalid UTF-8", "legal_name", func(in *passport.IssuerInput) { in.LegalName = "Volt\xffaris" }},
		{"unassigned country", "country", func(in *passport.IssuerInput) { in.Country = "XX" }},
		{"lower-case country", "country", func(in *passport.IssuerInput) { in.Country = "de" }},
		{"alpha-3 country", "country", func(in *passport.IssuerInput) { in.Country = "DEU" }},
		{"numeric country", "country", func(in *passport.IssuerInput) { in.Country = "276" }},
		{"reserved UK", "country", func(in *passport.IssuerInput) { in.Country = "UK" }},
		{"EU is no country", "country", func(in *passport.IssuerInput) { in.Country = "EU" }},
		{"empty country", "country", func(in *passport.IssuerInput) { in.Country = "" }},
		{"empty registration", "registration_id", func(in *passport.IssuerInput) { in.RegistrationID = "" }},
		{"huge registration", "registration_id", func(in *passport.IssuerInput) { in.RegistrationID = strings.Repeat("1", 101) }},
		{"tab in registration", "registration_id", func(in *passport.IssuerInput) { in.RegistrationID = "DE\t1" }},
		{"http website", "website", func(in *passport.IssuerInput) { in.Website = str("http://voltaris.example") }},
		{"javascript website", "website", func(in *passport.IssuerInput) { in.Website = str("javascript:alert(1)") }},
		{"no host", "website", func(in *passport.IssuerInput) { in.Website = str("https://") }},
		{"credentials", "website", func(in *passport.IssuerInput) { in.Website = str("https://u:p@voltaris.example") }},
		{"huge website", "website", func(in *passport.IssuerInput) { in.Website = str("https://v.example/" + strings.Repeat("a", 300)) }},
		{"space in website", "website", func(in *passport.IssuerInput) { in.Website = str("https://voltaris.example/a b") }},
	} {
		in := validIssuer()
		tc.change(&in)
		err := in.Validate()
		e := errcode.As(err)
		require.NotNil(t, e, tc.name)
		require.Equal(t, errcode.Validation, e.Code, tc.name)
		require.Equal(t, tc.field, e.Field, "%s: %v", tc.name, err)
	}
	for _, ok := range []string{"DE", "FR", "GB", "US", "CN", "JP", "AQ"} {
		require.True(t, passport.ValidCountry(ok), ok)
	}
	in := validIssuer()
	in.LegalName, in.Website = "Ελληνικά Μπαταρίες Α.Ε. — Съвместно", nil
	require.NoError(t, in.Validate(), "letters of any script, no website")
}

func TestIssuerProfileVerificationIsClearedByAChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenant := e.tenant(t)
	put := func(in passport.IssuerInput) (bpctype.IssuerProfile, error) {
		var p bpctype.IssuerProfile
		err := e.run(t, func(tx passport.Tx) error {
			var err error
			p, err = passport.SetIssuerProfile(e.Ctx, tx, tenant, in)
			return err
		})
		return p, err
	}
	verifyWith := func(checked passport.IssuerInput) (bpctype.IssuerProfile, error) {
		return verifyIssuer(t, e, tenant, checked)
	}
	// verifyIt verifies what the stored profile says, as an operator who
	// read it.
	verifyIt := func() (bpctype.IssuerProfile, error) {
		cur, err := e.Store.GetIssuerProfile(e.Ctx, tenant)
		if err != nil {
			return cur, err
		}
		return verifyWith(passport.IssuerInput{LegalName: cur.LegalName, Country: cur.Country, RegistrationID: cur.RegistrationID, Website: cur.Website})
	}

	_, err := verifyWith(validIssuer())
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err), "no profile to verify")
	_, err = put(passport.IssuerInput{LegalName: "X", Country: "XX", RegistrationID: "1"})
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Zero(t, e.Count(t, `SELECT count(*) FROM issuer_profiles WHERE tenant_id = $1`, tenant), "nothing stored")

	p, err := put(validIssuer())
	require.NoError(t, err)
	require.Nil(t, p.IdentityVerifiedAt)
	require.Equal(t, 1, e.events(t, passport.EventIssuerUpdated, tenant))

	p, err = verifyIt()
	require.NoError(t, err)
	require.NotNil(t, p.IdentityVerifiedAt)
	require.Equal(t, 1, e.events(t, passport.EventIssuerVerified, tenant))

	// The same values: nothing changes, the verification stays, no event.
	p, err = put(validIssuer())
	require.NoError(t, err)
	require.NotNil(t, p.IdentityVerifiedAt)
	require.Equal(t, 1, e.events(t, passport.EventIssuerUpdated, tenant))

	// Any change clears it, and the event says so.
	for i, change := range []func(*passport.IssuerInput){
		func(in *passport.IssuerInput) { in.LegalName = "Voltaris Battery Systems AG" },
		func(in *passport.IssuerInput) { in.Country = "AT" },
		func(in *passport.IssuerInput) { in.RegistrationID = "ATU12345678" },
		func(in *passport.IssuerInput) { in.Website = nil },
	} {
		_, err = verifyIt()
		require.NoError(t, err)
		// Each change starts from the stored profile.
		cur, err := e.Store.GetIssuerProfile(e.Ctx, tenant)
		require.NoError(t, err)
		in := passport.IssuerInput{LegalName: cur.LegalName, Country: cur.Country, RegistrationID: cur.RegistrationID, Website: cur.Website}
		change(&in)
		p, err = put(in)
		require.NoError(t, err)
		require.Nil(t, p.IdentityVerifiedAt, "change %d", i)
		var payload []byte
		require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT payload FROM events WHERE event_type = $1 AND aggregate_id = $2
			ORDER BY aggregate_version DESC LIMIT 1`, passport.EventIssuerUpdated, tenant).Scan(&payload))
		var ev passport.IssuerUpdated
		require.NoError(t, json.Unmarshal(payload, &ev))
		require.True(t, ev.VerificationCleared, "change %d", i)
	}

	// Another tenant's id that does not exist: NOT_FOUND.
	err = e.run(t, func(tx passport.Tx) error {
		_, err := passport.SetIssuerProfile(e.Ctx, tx, uuid.New(), validIssuer())
		return err
	})
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
}

// TestVerifyIssuerTakesWhatWasChecked: the platform verifies the values it
// checked; a profile changed after the operator read it is not verified
// (CONFLICT), and the event records the values checked.
func TestVerifyIssuerTakesWhatWasChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenant := e.tenant(t)
	put := func(in passport.IssuerInput) {
		require.NoError(t, e.run(t, func(tx passport.Tx) error {
			_, err := passport.SetIssuerProfile(e.Ctx, tx, tenant, in)
			return err
		}))
	}
	verify := func(checked passport.IssuerInput) (bpctype.IssuerProfile, error) {
		return verifyIssuer(t, e, tenant, checked)
	}

	put(validIssuer())
	checked := validIssuer() // what the operator read and checked
	// The tenant swaps in another company before the operator verifies.
	other := validIssuer()
	other.LegalName, other.RegistrationID = "Other Battery Corp", "DE999999999999999"
	put(other)
	_, err := verify(checked)
	require.Equal(t, errcode.Conflict, errcode.CodeOf(err), "%v", err)
	cur, err := e.Store.GetIssuerProfile(e.Ctx, tenant)
	require.NoError(t, err)
	require.Nil(t, cur.IdentityVerifiedAt, "nothing verified")
	require.Zero(t, e.events(t, passport.EventIssuerVerified, tenant))

	// Each member must match.
	for i, change := range []func(*passport.IssuerInput){
		func(in *passport.IssuerInput) { in.LegalName += " " },
		func(in *passport.IssuerInput) { in.Country = "AT" },
		func(in *passport.IssuerInput) { in.RegistrationID = "x" },
		func(in *passport.IssuerInput) { w := "https://other.example"; in.Website = &w },
		func(in *passport.IssuerInput) { in.Website = nil },
	} {
		in := other
		change(&in)
		_, err := verify(in)
		require.Equal(t, errcode.Conflict, errcode.CodeOf(err), "change %d", i)
	}
	require.Zero(t, e.events(t, passport.EventIssuerVerified, tenant))

	// What is stored verifies, and the event records it.
	p, err := verify(other)
	require.NoError(t, err)
	require.NotNil(t, p.IdentityVerifiedAt)
	var payload []byte
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT payload FROM events WHERE event_type = $1 AND aggregate_id = $2`,
		passport.EventIssuerVerified, tenant).Scan(&payload))
	var ev passport.IssuerVerified
	require.NoError(t, json.Unmarshal(payload, &ev))
	require.Equal(t, other, ev.Checked)
	require.Equal(t, other.LegalName, ev.LegalName)

	// No website and an empty one are the same.
	noSite := other
	noSite.Website = nil
	put(noSite)
	noSite.Website = new(string)
	_, err = verify(noSite)
	require.NoError(t, err)
}

// verifyIssuer verifies the tenant's issuer profile as the platform does,
// sending checked as what it checked, in a transaction of its own.
func verifyIssuer(t *testing.T, e env, tenant uuid.UUID, checked passport.IssuerInput) (bpctype.IssuerProfile, error) {
	t.Helper()
	var p bpctype.IssuerProfile
	err := e.run(t, func(tx passport.Tx) error {
		var err error
		p, err = passport.VerifyIssuer(e.Ctx, tx, tenant, checked, time.Now())
		return err
	})
	return p, err
}
