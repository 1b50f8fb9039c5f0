package auth_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
)

// A wing policy decides capabilities; curators can also write and read.
func ExamplePolicy_Caps() {
	p := auth.Policy{
		Readers:  []string{"domain:acme.com"},
		Writers:  []string{"group:payments"},
		Curators: []string{"email:lead@acme.com"},
	}
	fmt.Println(p.Caps("ann@acme.com", nil))
	fmt.Println(p.Caps("bob@partner.io", []string{"payments"}))
	fmt.Println(p.Caps(" Lead@ACME.com", nil))
	fmt.Println(p.Caps("eve@evil.io", nil))
	// Output:
	// read
	// read,write
	// read,write,curate
	// none
}

// The shard mints a token for what its policy grants and checks it on each
// call; the caller checks the capability a tool needs.
func ExampleMinter() {
	now := func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	key, err := auth.GenerateKey()
	if err != nil {
		panic(err)
	}
	m := auth.NewMinter("payments", key, 0, now)
	ssoExpiry := now().Add(5 * time.Minute) // the shard token never outlives the SSO token
	tok, exp, err := m.Mint("ann@acme.com", brain.CapRead|brain.CapWrite, ssoExpiry)
	if err != nil {
		panic(err)
	}
	fmt.Println("expires:", exp.Format(time.Kitchen))

	v := auth.NewTokenVerifier("payments", now, key.Public())
	claims, err := v.Verify(tok)
	if err != nil {
		panic(err)
	}
	fmt.Println(claims.Email, claims.Caps, "curate:", claims.Caps.Has(brain.CapCurate))

	_, err = auth.NewTokenVerifier("hr", now, key.Public()).Verify(tok)
	fmt.Println("at another wing:", errors.Is(err, auth.ErrWrongWing))
	// Output:
	// expires: 12:05PM
	// ann@acme.com read,write curate: false
	// at another wing: true
}
