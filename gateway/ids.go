package gateway

// validID reports whether s is a valid sandbox, session, terminal or process id: 1-63
// characters of [a-z0-9_-], starting with a letter or digit. Server-made ids (sb_…,
// proc_…, sess_…) have the same shape, so one rule covers both.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}
