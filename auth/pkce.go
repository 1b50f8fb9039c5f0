package auth

// ValidPKCE checks a PKCE code verifier or challenge (RFC 7636 §4.1): 43
// to 128 unreserved characters. The gateway's authorization server and the
// development IdP check both with it.
func ValidPKCE(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}
