package web

import (
	"net"
	"net/http"
	"testing"
)

func TestOriginPolicy(t *testing.T) {
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11435}
	lan := &net.TCPAddr{IP: net.IPv4zero, Port: 11435}
	tests := []struct {
		name    string
		addr    *net.TCPAddr
		origins []string
		host    string
		origin  string
		hostOK  bool
		allowed bool
	}{
		{"no origin (curl, SDKs)", loop, nil, "127.0.0.1:11435", "", true, true},
		{"own page at 127.0.0.1", loop, nil, "127.0.0.1:11435", "http://127.0.0.1:11435", true, true},
		{"own page at localhost", loop, nil, "localhost:11435", "http://localhost:11435", true, true},
		{"own page at localhost calling 127.0.0.1", loop, nil, "127.0.0.1:11435", "http://localhost:11435", true, true},
		{"IPv6 loopback", loop, nil, "[::1]:11435", "http://[::1]:11435", true, true},
		{"another site", loop, nil, "127.0.0.1:11435", "http://evil.example", true, false},
		{"another local port", loop, nil, "127.0.0.1:11435", "http://localhost:3000", true, false},
		{"file page", loop, nil, "127.0.0.1:11435", "null", true, false},
		{"rebinding: host and origin agree on a foreign name", loop, nil, "evil.example:11435", "http://evil.example:11435", false, false},
		{"rebinding without origin", loop, nil, "evil.example", "", false, true},
		{"*.localhost name", loop, nil, "app.localhost:11435", "http://app.localhost:11435", true, true},
		{"allowed exactly", loop, []string{"https://app.example.com"}, "127.0.0.1:11435", "https://app.example.com", true, true},
		{"allowed with trailing slash", loop, []string{"https://app.example.com/"}, "127.0.0.1:11435", "https://APP.example.com", true, true},
		{"allowed by port wildcard", loop, []string{"http://localhost:*"}, "127.0.0.1:11435", "http://localhost:3000", true, true},
		{"allowed by host wildcard", loop, []string{"https://*.example.com"}, "127.0.0.1:11435", "https://a.example.com", true, true},
		{"wildcard does not cross the scheme", loop, []string{"https://*.example.com"}, "127.0.0.1:11435", "http://a.example.com", true, false},
		{"star allows any", loop, []string{"*"}, "127.0.0.1:11435", "http://evil.example", true, true},
		{"LAN server: any Host", lan, nil, "mymac.local:11435", "", true, true},
		{"LAN server: own page by IP", lan, nil, "192.168.1.5:11435", "http://192.168.1.5:11435", true, true},
		{"LAN server: a DNS name may be rebound", lan, nil, "evil.example:11435", "http://evil.example:11435", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newOriginPolicy(tt.addr, tt.origins)
			if got := p.hostOK(tt.host); got != tt.hostOK {
				t.Errorf("hostOK(%q) = %v, want %v", tt.host, got, tt.hostOK)
			}
			if tt.origin == "" {
				return
			}
			if got := p.originOK(tt.origin, tt.host); got != tt.allowed {
				t.Errorf("originOK(%q, %q) = %v, want %v", tt.origin, tt.host, got, tt.allowed)
			}
		})
	}
}

func TestCORS(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.opt.Origins = []string{"http://app.example"} })
	pre := ts.do(t, http.MethodOptions, "/v1/chat/completions", "", map[string]string{
		"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type",
	})
	h := pre.Header
	if pre.Status != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "http://app.example" ||
		h.Get("Access-Control-Allow-Headers") != "authorization, content-type" || h.Get("Access-Control-Allow-Methods") == "" {
		t.Errorf("preflight = %d %v", pre.Status, h)
	}
	r := ts.do(t, http.MethodPost, "/v1/chat/completions", chatBody("hi", 2, ""), map[string]string{"Origin": "http://app.example"})
	if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "http://app.example" {
		t.Errorf("allowed origin: %d, Access-Control-Allow-Origin %q", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}
	own := ts.do(t, http.MethodGet, "/health", "", map[string]string{"Origin": ts.URL})
	if own.Status != 200 {
		t.Errorf("the server's own origin: %d %s", own.Status, own.Body)
	}
	other := ts.do(t, http.MethodOptions, "/v1/chat/completions", "", map[string]string{"Origin": "http://other.example", "Access-Control-Request-Method": "POST"})
	if other.Status != http.StatusForbidden || other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from a disallowed origin = %d %v", other.Status, other.Header)
	}
}
