package web

import (
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// originPolicy decides which browsers may talk to the server.
//
// A request without an Origin header (curl, SDKs) passes. A browser request
// passes when its Origin is the server's own (the page came from this
// server) or matches one of the configured origins. When the server is
// bound to loopback, the Host header must also be a loopback name, so a
// DNS-rebinding page (evil.example resolving to 127.0.0.1) is refused even
// though its Origin matches its Host.
type originPolicy struct {
	loopback bool
	port     string
	allowed  []string // exact origins or path.Match patterns; "*" allows any
}

func newOriginPolicy(addr net.Addr, origins []string) *originPolicy {
	p := &originPolicy{}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		p.loopback = tcp.IP.IsLoopback()
		p.port = strconv.Itoa(tcp.Port)
	}
	for _, o := range origins {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			p.allowed = append(p.allowed, strings.ToLower(o))
		}
	}
	return p
}

// splitHost splits "host:port" or "[v6]:port" or a bare host.
func splitHost(hostport string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.Trim(hostport, "[]")), ""
}

// isLoopbackName reports whether host is localhost, a *.localhost name or
// a loopback IP literal.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOK is the DNS-rebinding check.
func (p *originPolicy) hostOK(hostHeader string) bool {
	if !p.loopback || hostHeader == "" {
		return true
	}
	h, _ := splitHost(hostHeader)
	return isLoopbackName(h)
}

// originOK reports whether a browser at origin may call the server reached
// through the Host header host.
func (p *originPolicy) originOK(origin, host string) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	for _, a := range p.allowed {
		if a == "*" || a == o {
			return true
		}
		if ok, _ := path.Match(a, o); ok {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	oh, oport := splitHost(u.Host)
	if oport == "" {
		oport = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	// A page of this server reached by a loopback name (any of them: the
	// chat at localhost may call 127.0.0.1).
	if isLoopbackName(oh) && oport == p.port {
		return true
	}
	// Same origin as the Host it asked, when that Host cannot have been
	// rebound: an IP literal (e.g. the server on the LAN by address).
	if strings.EqualFold(u.Host, host) || strings.EqualFold(oh+":"+oport, host) {
		hh, _ := splitHost(host)
		return net.ParseIP(hh) != nil || isLoopbackName(hh)
	}
	return false
}

// guard applies the policy before routing and answers CORS preflights for
// allowed origins.
func (s *Server) guard(p *originPolicy) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if !p.hostOK(r.Host) {
				return &apiError{status: http.StatusForbidden, code: "host_not_allowed",
					msg: "host " + strconv.Quote(r.Host) + " is not allowed: this server listens on loopback and answers only to localhost names (DNS-rebinding protection)"}
			}
			origin := r.Header.Get(echo.HeaderOrigin)
			if origin == "" {
				return next(c)
			}
			if !p.originOK(origin, r.Host) {
				return &apiError{status: http.StatusForbidden, code: "origin_not_allowed",
					msg: "origin " + strconv.Quote(origin) + " is not allowed (start hearth with --origins " + origin + " or set HEARTH_ORIGINS to allow it)"}
			}
			h := c.Response().Header()
			h.Set(echo.HeaderAccessControlAllowOrigin, origin)
			h.Add(echo.HeaderVary, echo.HeaderOrigin)
			if r.Method == http.MethodOptions && r.Header.Get(echo.HeaderAccessControlRequestMethod) != "" {
				h.Set(echo.HeaderAccessControlAllowMethods, "GET, POST, DELETE, OPTIONS")
				if req := r.Header.Get(echo.HeaderAccessControlRequestHeaders); req != "" {
					h.Set(echo.HeaderAccessControlAllowHeaders, req)
				}
				if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
					h.Set("Access-Control-Allow-Private-Network", "true")
				}
				h.Set(echo.HeaderAccessControlMaxAge, "600")
				return c.NoContent(http.StatusNoContent)
			}
			return next(c)
		}
	}
}
