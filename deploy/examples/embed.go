// Package examples ships the sample brain and its development policies inside
// the binary, so `brainstem dev` works from any directory.
package examples

import (
	"embed"
	"io/fs"
)

//go:embed all:brain policies
var files embed.FS

// Brain returns the sample brain: wiki/, inbox/ and sessions/ of three wings.
func Brain() fs.FS {
	sub, err := fs.Sub(files, "brain")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// Policies returns the development wing policies, one <wing>.yaml each.
func Policies() fs.FS {
	sub, err := fs.Sub(files, "policies")
	if err != nil {
		panic(err)
	}
	return sub
}
