package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"hearth/engine/fit"
	"hearth/engine/registry"
)

// defaultCatalogURL is where `hearth pull --catalog` fetches the model
// catalog from unless HEARTH_CATALOG_URL says otherwise. Hearth has no
// published address for it yet, so it is empty and the command asks for
// the variable rather than guess one (docs/catalog.md).
const defaultCatalogURL = ""

// cacheRoot is where Hearth keeps what it can fetch again (the starter
// model, the catalog): $XDG_CACHE_HOME, else the platform's cache
// directory (~/.cache on Linux, ~/Library/Caches on macOS).
func (c *cli) cacheRoot() (string, error) {
	if root := c.env.Getenv("XDG_CACHE_HOME"); root != "" {
		return root, nil
	}
	return os.UserCacheDir()
}

// catalogPath is the catalog `hearth pull --catalog` writes; "" when there
// is no cache directory.
func (c *cli) catalogPath() string {
	root, err := c.cacheRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "hearth", "catalog.json")
}

// catalog is the model catalog: the one `hearth pull --catalog` fetched
// when it is newer than the one built in. warn, when not nil, hears why a
// fetched file was ignored.
func (c *cli) catalog(warn io.Writer) *registry.Catalog {
	cat, err := registry.LoadCatalog(c.catalogPath())
	if err != nil && warn != nil {
		fmt.Fprintf(warn, "hearth: using the built-in model catalog: %v\n", err)
	}
	return cat
}

// pullCatalog fetches a newer catalog (hearth pull --catalog).
func (c *cli) pullCatalog(ctx context.Context) error {
	url := cmp.Or(c.env.Getenv("HEARTH_CATALOG_URL"), defaultCatalogURL)
	if url == "" {
		return fmt.Errorf("pull --catalog: Hearth has no published catalog address yet; set HEARTH_CATALOG_URL to the URL of a catalog file (the format of engine/registry/catalog.json)")
	}
	path := c.catalogPath()
	if path == "" {
		return fmt.Errorf("pull --catalog: no cache directory to keep it in (set XDG_CACHE_HOME)")
	}
	cat, err := registry.FetchCatalog(ctx, nil, url, path)
	if err != nil {
		return fmt.Errorf("pull --catalog: %w", err)
	}
	fmt.Fprintf(c.stdout, "model catalog of %s (%d models) from %s, saved to %s\n", cat.Updated, len(cat.Models), url, path)
	if b := registry.BuiltinCatalog(); cat.Updated < b.Updated {
		fmt.Fprintf(c.stdout, "the catalog built into this hearth (%s) is newer and stays in use\n", b.Updated)
	}
	return nil
}

// available prints the catalog judged for this machine, best fit first
// (hearth ls --available), at ctxTokens of context (0: a load's default).
func (c *cli) available(ctxTokens int) error {
	cat := c.catalog(c.stderr)
	var judge func(registry.Record) fit.Verdict
	if mem, err := fit.System(); err == nil {
		judge = registry.FitAt(mem, ctxTokens)
	}
	recs, err := c.registry().List()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range recs {
		if r.Revision != "" { // a snapshot: a pull that finished
			have[r.ID] = true
		}
	}
	offers := cat.Offers(judge, func(repo string) bool { return have[repo] })
	if err := registry.OfferTable(c.stdout, offers); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "\n%d models in the catalog of %s; sizes with ~ are estimates until pulled. Pull one: hearth pull NAME\n", len(offers), cat.Updated)
	return nil
}
