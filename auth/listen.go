package auth

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// AnonymousAllowed decides, at start, whether requests without a credential are served (as
// Anonymous()) on the listen address ("host:port"):
//
//   - with auth.allow_anonymous, always;
//   - with keys or a JWT issuer configured, never: callers must authenticate;
//   - with neither, only on a loopback address (127.0.0.1, ::1, localhost). Anywhere else the
//     error says to configure auth.keys or auth.jwt, or to set auth.allow_anonymous: the server
//     must then refuse to start.
func AnonymousAllowed(listen string, c Config) (bool, error) {
	switch {
	case c.AllowAnonymous:
		return true, nil
	case c.Configured():
		return false, nil
	case loopback(listen):
		return true, nil
	}
	return false, fmt.Errorf("listen %q is not a loopback address and no caller authentication is configured: "+
		"set auth.keys or auth.jwt so that callers authenticate, or auth.allow_anonymous to true to serve anyone who can connect", listen)
}

// loopback reports whether a listen address is on a loopback host; one without a host listens
// on every interface.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	return err == nil && loopbackHost(host)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
