package toolspec

import "github.com/brainstem/brainstem/brain"

// WingsTool is the name of brain_wings, the gateway's own tool.
const WingsTool = "brain_wings"

// WingsAnswer is brain_wings' answer: the wings the caller can reach with
// the capabilities held in each, and the wings that could not say in time
// (listed only to a caller who holds a capability there).
type WingsAnswer struct {
	Wings       []WingCaps        `json:"wings"`
	Unavailable []UnavailableWing `json:"unavailable,omitempty"`
}

// WingCaps is one wing of WingsAnswer.
type WingCaps struct {
	Wing         string   `json:"wing"`
	Capabilities []string `json:"capabilities"`
}

// UnavailableWing is a wing left out of an answer that looks at every
// wing (brain_wings, a cross-wing search), with why.
type UnavailableWing struct {
	Wing  string     `json:"wing"`
	Code  brain.Code `json:"code"`
	Error string     `json:"error"`
}

// Wings declares brain_wings. No shard serves it: the gateway answers it
// from every wing's grant (a shard on stdio has no such tool), so it takes
// no argument, routes nowhere and needs no capability of its own.
func Wings() *Spec {
	return &Spec{
		Name: WingsTool, Title: "Wings", ReadOnly: true, Idempotent: true,
		Description: "List the wings (areas of the team brain) you can reach and your capabilities in each (read, write, curate).",
		Result:      WingsAnswer{},
	}
}
