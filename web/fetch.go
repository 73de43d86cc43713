package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Fetching the http(s) URL of an image or video part, when the server
// allows it (MediaOptions.FetchURLs, hearth serve --allow-media-urls).
// A request's URL is outside input: the download is bounded in size and
// time, goes through no proxy, follows at most a few redirects, and never
// connects to a loopback, private, link-local or otherwise internal
// address, however the name resolves (the check is on each connection's
// address, so a redirect or a DNS answer cannot lead it inside).

// maxRedirects bounds the redirects a media fetch follows.
const maxRedirects = 5

// fetchClient is the HTTP client media fetches use.
func (s *Server) fetchClient() *http.Client {
	s.fetchOnce.Do(func() {
		allow := s.opt.Media.allowPrivate
		dialer := &net.Dialer{
			Timeout: 10 * time.Second,
			Control: func(network, address string, _ syscall.RawConn) error {
				if allow {
					return nil
				}
				return publicAddress(address)
			},
		}
		s.fetcher = &http.Client{
			Transport: &http.Transport{
				Proxy:                 nil,
				DialContext:           dialer.DialContext,
				TLSHandshakeTimeout:   10 * time.Second,
				ResponseHeaderTimeout: 15 * time.Second,
				MaxIdleConns:          4,
				IdleConnTimeout:       30 * time.Second,
			},
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= maxRedirects {
					return fmt.Errorf("more than %d redirects", maxRedirects)
				}
				if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
					return fmt.Errorf("a redirect to a %s: URL", req.URL.Scheme)
				}
				return nil
			},
		}
	})
	return s.fetcher
}

// errInternalAddress is a connection the fetch refuses to make.
var errInternalAddress = errors.New("internal address")

// publicAddress refuses an address ("ip:port") a media fetch must not
// reach: loopback, private (RFC 1918, unique local), link-local,
// shared (CGNAT), unspecified and multicast addresses.
func publicAddress(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errInternalAddress, address)
	}
	a := ap.Addr().Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a) {
		return fmt.Errorf("%w: %s", errInternalAddress, a)
	}
	return nil
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// fetchMedia downloads rawURL, at most max bytes of it. Its errors are
// for the user (the caller names the field).
func (s *Server) fetchMedia(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not a valid http(s) URL")
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.opt.Media.FetchTimeout)
	defer cancel()
	// failed words a failure: the client gone, the time up, or why.
	failed := func(err error) error {
		switch {
		case parent.Err() != nil:
			return parent.Err()
		case ctx.Err() != nil:
			return fmt.Errorf("fetching it from %s took longer than %s", u.Hostname(), s.opt.Media.FetchTimeout)
		case errors.Is(err, errInternalAddress):
			return fmt.Errorf("%s resolves to a loopback, private or link-local address, which Hearth does not fetch from; send the bytes as a base64 data URL", u.Hostname())
		}
		return fmt.Errorf("could not fetch it from %s: %s", u.Hostname(), fetchReason(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errors.New("not a valid http(s) URL")
	}
	req.Header.Set("User-Agent", "hearth/"+s.opt.Version)
	req.Header.Set("Accept", "image/*, video/*;q=0.9, */*;q=0.5")
	resp, err := s.fetchClient().Do(req)
	if err != nil {
		return nil, failed(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", u.Hostname(), resp.Status)
	}
	if resp.ContentLength > max {
		return nil, &tooLarge{n: resp.ContentLength, max: max}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, failed(err)
	}
	if int64(len(data)) > max {
		return nil, &tooLarge{max: max}
	}
	return data, nil
}

// fetchReason is a fetch error without Go's wrapping ("Get \"…\": ").
func fetchReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "dial") {
		msg = msg[i+2:]
	}
	return msg
}
