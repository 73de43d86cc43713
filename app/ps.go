package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"hearth/engine/fit"
)

// psReply is the part of GET /api/ps that `hearth ps` prints.
type psReply struct {
	Models []struct {
		ID            string    `json:"id"`
		Family        string    `json:"family"`
		Backend       string    `json:"backend"`
		ContextTokens int       `json:"context_length"`
		WeightBytes   int64     `json:"weight_bytes"`
		Quantization  string    `json:"quantization"`
		Active        int       `json:"active_requests"`
		LoadedAt      time.Time `json:"loaded_at"`
		ExpiresAt     time.Time `json:"expires_at"` // zero: kept until evicted
		SizeBytes     int64     `json:"size"`
	} `json:"models"`
	Memory struct {
		ProcessRSSBytes      uint64 `json:"process_rss_bytes"`
		SystemTotalBytes     uint64 `json:"system_total_bytes"`
		SystemAvailableBytes uint64 `json:"system_available_bytes"`
	} `json:"memory"`
}

// ps asks the running server what it has loaded.
func (c *cli) ps(args []string) error {
	fs := c.flags("ps", "ps [flags]")
	addr, err := c.addrFlags(fs, false)
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	url := addr.baseURL() + "/api/ps"
	ctx, cancel := context.WithTimeout(c.context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ps: is the server running? (hearth serve): %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("ps: %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ps: %s: %s: %s", url, resp.Status, body)
	}
	var ps psReply
	if err := json.Unmarshal(body, &ps); err != nil {
		return fmt.Errorf("ps: %s: %w", url, err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFAMILY\tBACKEND\tCONTEXT\tWEIGHTS\tMEMORY\tQUANT\tACTIVE\tLOADED\tUNTIL")
	now := time.Now()
	for _, m := range ps.Models {
		q := m.Quantization
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s ago\t%s\n", m.ID, m.Family, m.Backend, m.ContextTokens,
			fit.FormatBytes(m.WeightBytes), fit.FormatBytes(m.SizeBytes), q, m.Active, now.Sub(m.LoadedAt).Round(time.Second), until(now, m.ExpiresAt, m.Active))
	}
	tw.Flush()
	if len(ps.Models) == 0 {
		fmt.Fprintln(c.stdout, "(no model loaded)")
	}
	fmt.Fprintf(c.stdout, "memory: server %s resident; system %s available of %s\n",
		fit.FormatBytes(int64(ps.Memory.ProcessRSSBytes)), fit.FormatBytes(int64(ps.Memory.SystemAvailableBytes)), fit.FormatBytes(int64(ps.Memory.SystemTotalBytes)))
	return nil
}

// until says when a model unloads if no request comes, as Ollama's ps does.
func until(now, expires time.Time, active int) string {
	switch {
	case expires.IsZero():
		return "forever"
	case active > 0:
		return "in use"
	case !expires.After(now):
		return "unloading"
	}
	return "in " + expires.Sub(now).Round(time.Second).String()
}
