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
	addr, err := c.addrFlags(fs)
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
	fmt.Fprintln(tw, "NAME\tFAMILY\tBACKEND\tCONTEXT\tWEIGHTS\tQUANT\tACTIVE\tLOADED")
	for _, m := range ps.Models {
		q := m.Quantization
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s ago\n", m.ID, m.Family, m.Backend, m.ContextTokens,
			fit.FormatBytes(m.WeightBytes), q, m.Active, time.Since(m.LoadedAt).Round(time.Second))
	}
	tw.Flush()
	if len(ps.Models) == 0 {
		fmt.Fprintln(c.stdout, "(no model loaded)")
	}
	fmt.Fprintf(c.stdout, "memory: server %s resident; system %s available of %s\n",
		fit.FormatBytes(int64(ps.Memory.ProcessRSSBytes)), fit.FormatBytes(int64(ps.Memory.SystemAvailableBytes)), fit.FormatBytes(int64(ps.Memory.SystemTotalBytes)))
	return nil
}
