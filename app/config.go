package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Defaults for the server address.
const (
	defaultHost = "127.0.0.1"
	defaultPort = 11435
)

// addrFlags are --host and --port with HEARTH_HOST and HEARTH_PORT as their
// defaults. HEARTH_HOST may carry a port too ("0.0.0.0:8080").
type addrFlags struct {
	host *string
	port *int
}

func (c *cli) addrFlags(fs *flag.FlagSet, listen bool) (*addrFlags, error) {
	host, port := defaultHost, defaultPort
	if v := c.env.Getenv("HEARTH_PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("HEARTH_PORT=%q is not a port number", v)
		}
		port = p
	}
	if v := c.env.Getenv("HEARTH_HOST"); v != "" {
		host = v
		if h, p, err := net.SplitHostPort(v); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("HEARTH_HOST=%q: %q is not a port number", v, p)
			}
			host, port = h, n
		}
	}
	if !listen { // a client of the running server (hearth ps)
		return &addrFlags{
			host: fs.String("host", host, "address of the running server (env HEARTH_HOST)"),
			port: fs.Int("port", port, "port of the running server (env HEARTH_PORT)"),
		}, nil
	}
	return &addrFlags{
		host: fs.String("host", host, "address to listen on (env HEARTH_HOST); 0.0.0.0 exposes the server to the network"),
		port: fs.Int("port", port, "port to listen on (env HEARTH_PORT)"),
	}, nil
}

func (a *addrFlags) addr() string { return net.JoinHostPort(*a.host, strconv.Itoa(*a.port)) }

// baseURL is where a client reaches the server (0.0.0.0 is reached on
// loopback).
func (a *addrFlags) baseURL() string {
	h := *a.host
	if h == "" || h == "0.0.0.0" || h == "::" {
		h = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(h, strconv.Itoa(*a.port))
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
