package tools

import "github.com/brainstem/brainstem/search"

// Limits bound what a call may carry. A zero field takes its default.
type Limits struct {
	MaxArgsBytes   int // raw arguments of one call; default 1 MiB
	MaxBodyBytes   int // a note body (write, update, each ingested page); default 256 KiB
	MaxTitleBytes  int // a title; default 300
	MaxTags        int // tags per note; default 32
	MaxTagBytes    int // one tag; default 64
	MaxReasonBytes int // an update's reason; default 1,024
	MaxQueryBytes  int // a brain_query query; default 1,024
	MaxQueryTerms  int // searchable terms in a query; default 32
	MaxPages       int // pages of one brain_ingest_raw call; default 100
	MaxEntryBytes  int // one session_log entry, compact JSON; default 64 KiB
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		MaxArgsBytes:   1 << 20,
		MaxBodyBytes:   256 << 10,
		MaxTitleBytes:  300,
		MaxTags:        32,
		MaxTagBytes:    64,
		MaxReasonBytes: 1024,
		MaxQueryBytes:  1024,
		MaxQueryTerms:  32,
		MaxPages:       100,
		MaxEntryBytes:  64 << 10,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxArgsBytes, d.MaxArgsBytes)
	set(&l.MaxBodyBytes, d.MaxBodyBytes)
	set(&l.MaxTitleBytes, d.MaxTitleBytes)
	set(&l.MaxTags, d.MaxTags)
	set(&l.MaxTagBytes, d.MaxTagBytes)
	set(&l.MaxReasonBytes, d.MaxReasonBytes)
	set(&l.MaxQueryBytes, d.MaxQueryBytes)
	set(&l.MaxQueryTerms, d.MaxQueryTerms)
	set(&l.MaxPages, d.MaxPages)
	set(&l.MaxEntryBytes, d.MaxEntryBytes)
	return l
}

// Search returns the limits of a query, which the search package applies.
func (l Limits) Search() search.Limits {
	return search.Limits{MaxQueryBytes: l.MaxQueryBytes, MaxQueryTerms: l.MaxQueryTerms}
}

// List limits (not configurable: they are part of the tools' contract;
// brain_query's are search.DefaultLimit and search.MaxLimit, which
// the gateway applies too).
const (
	ListDefaultLimit    = 50
	ListMaxLimit        = 200
	PendingDefaultLimit = 20
	PendingMaxLimit     = 200
	// session_list and session_read pages.
	SessionListDefaultLimit = 50
	SessionListMaxLimit     = 200
	SessionReadDefaultLimit = 100
	SessionReadMaxLimit     = 500
)
