package machine

import (
	"log/slog"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/gateway/oauth/config"
)

// account is a loaded service account (oauth.ServiceAccount).
type account struct {
	id, name, email string
	creds           []config.LoadedCredential
	// failures is the account's budget of failed authentications
	// (clientAuthFailed), made with the account at start: an attacker
	// cannot evict it by making up client ids or addresses.
	failures *failureBudget
}

// loadServiceAccounts reads the credentials of valid accounts (files
// included) and logs each account and credential.
func loadServiceAccounts(accts []oauth.ServiceAccount, log *slog.Logger) (map[string]*account, error) {
	creds, err := config.LoadServiceAccounts(accts)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*account, len(accts))
	for i, a := range accts {
		email, _ := auth.ServiceAccountEmail(a.ID) // checked by LoadServiceAccounts
		out[a.ID] = &account{id: a.ID, name: a.Name, email: email, creds: creds[i], failures: newFailureBudget(ClientFailuresPerMin)}
	}
	for _, acc := range out {
		list := make([]string, 0, len(acc.creds))
		for _, c := range acc.creds {
			s := c.ID
			if !c.NotAfter.IsZero() {
				s += " until " + c.NotAfter.UTC().Format(time.RFC3339)
			}
			list = append(list, s)
		}
		log.Info("oauth: service account", "client", acc.id, "name", acc.name, "email", acc.email, "credentials", list)
	}
	return out, nil
}
