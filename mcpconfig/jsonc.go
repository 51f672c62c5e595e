package mcpconfig

// stripJSONC turns JSON with comments (// and /* */) and trailing commas, as VS Code writes its
// settings and mcp.json, into plain JSON. Strings are copied untouched; a comment becomes spaces
// (newlines kept), so a decoding error's offset still points into the original text.
func stripJSONC(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(in) && in[j] != '"' {
				if in[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(in))
			out = append(out, in[i:end]...)
			i = end - 1
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			i--
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			out = append(out, ' ', ' ')
			i += 2
			for i < len(in) && !(in[i] == '*' && i+1 < len(in) && in[i+1] == '/') {
				out = append(out, blank(in[i]))
				i++
			}
			if i < len(in) {
				out = append(out, ' ', ' ')
				i++
			}
		case c == ',':
			// A comma followed only by blanks (and comments, already blanked or ahead) and a
			// closing bracket is a trailing comma.
			if closesAfter(in, i+1) {
				out = append(out, ' ')
			} else {
				out = append(out, c)
			}
		default:
			out = append(out, c)
		}
	}
	return out
}

func blank(c byte) byte {
	if c == '\n' || c == '\r' {
		return c
	}
	return ' '
}

// closesAfter reports whether the next significant byte from i, past blanks and comments, is '}'
// or ']'.
func closesAfter(in []byte, i int) bool {
	for i < len(in) {
		switch {
		case in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r':
			i++
		case in[i] == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
		case in[i] == '/' && i+1 < len(in) && in[i+1] == '*':
			i += 2
			for i < len(in) && !(in[i] == '*' && i+1 < len(in) && in[i+1] == '/') {
				i++
			}
			i += 2
		default:
			return in[i] == '}' || in[i] == ']'
		}
	}
	return false
}
