package main

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parsePlist reads an XML property list as plutil -lint checks one: an
// XML document whose root is <plist> holding exactly one value; dict keys
// unique and each followed by one value; integers, reals, dates and data
// in their formats; nothing else. Values come back as map[string]any,
// []any, string, int64, float64, bool, time.Time and []byte.
func parsePlist(raw []byte) (any, error) {
	d := xml.NewDecoder(bytes.NewReader(raw))
	d.Strict = true
	var root any
	seenRoot := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "plist" || seenRoot {
				return nil, fmt.Errorf("root element <%s>, want one <plist>", t.Name.Local)
			}
			seenRoot = true
			v, err := plistChildren(d, "plist")
			if err != nil {
				return nil, err
			}
			if len(v) != 1 {
				return nil, fmt.Errorf("<plist> holds %d values, want 1", len(v))
			}
			root = v[0]
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, fmt.Errorf("text %q outside <plist>", t)
			}
		}
	}
	if !seenRoot {
		return nil, errors.New("no <plist> element")
	}
	return root, nil
}

// plistChildren reads the values inside an element until its end.
func plistChildren(d *xml.Decoder, parent string) ([]any, error) {
	var out []any
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("in <%s>: %w", parent, err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return out, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, fmt.Errorf("text %q in <%s>", t, parent)
			}
		case xml.StartElement:
			v, err := plistValue(d, t)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
}

var plistDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)

func plistValue(d *xml.Decoder, start xml.StartElement) (any, error) {
	name := start.Name.Local
	switch name {
	case "dict":
		return plistDict(d)
	case "array":
		return plistChildren(d, "array")
	case "true", "false":
		if text, err := plistText(d, name); err != nil || text != "" {
			return nil, fmt.Errorf("<%s> is not empty (%q, %v)", name, text, err)
		}
		return name == "true", nil
	}
	text, err := plistText(d, name)
	if err != nil {
		return nil, err
	}
	switch name {
	case "key":
		return plistKey(text), nil
	case "string":
		return text, nil
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("<integer>%s</integer>: %w", text, err)
		}
		return n, nil
	case "real":
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("<real>%s</real>: %w", text, err)
		}
		return f, nil
	case "date":
		if !plistDate.MatchString(text) {
			return nil, fmt.Errorf("<date>%s</date> is not YYYY-MM-DDTHH:MM:SSZ", text)
		}
		return time.Parse(time.RFC3339, text)
	case "data":
		clean := strings.Join(strings.Fields(text), "")
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, fmt.Errorf("<data>: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown plist element <%s>", name)
}

// plistText reads an element's text, refusing child elements.
func plistText(d *xml.Decoder, name string) (string, error) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", fmt.Errorf("in <%s>: %w", name, err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.EndElement:
			return b.String(), nil
		case xml.StartElement:
			return "", fmt.Errorf("<%s> inside <%s>", t.Name.Local, name)
		}
	}
}

func plistDict(d *xml.Decoder) (map[string]any, error) {
	items, err := plistChildren(d, "dict")
	if err != nil {
		return nil, err
	}
	return pairUp(items)
}

// plistKey marks a <key> among a dict's children.
type plistKey string

// pairUp turns a dict's children into keys and values.
func pairUp(items []any) (map[string]any, error) {
	if len(items)%2 != 0 {
		return nil, fmt.Errorf("<dict> has %d children: a key without a value", len(items))
	}
	m := map[string]any{}
	for i := 0; i < len(items); i += 2 {
		k, ok := items[i].(plistKey)
		if !ok {
			return nil, fmt.Errorf("<dict> child %d is %T, want a <key>", i, items[i])
		}
		if _, ok := items[i+1].(plistKey); ok {
			return nil, fmt.Errorf("key %q is followed by another key", k)
		}
		if _, dup := m[string(k)]; dup {
			return nil, fmt.Errorf("key %q appears twice", k)
		}
		m[string(k)] = items[i+1]
	}
	return m, nil
}

func readPlist(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parsePlist(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: root is %T, want a dict", path, v)
	}
	return m
}

// checkNoKeys refuses a <key> outside a dict.
func checkNoKeys(v any) error {
	switch v := v.(type) {
	case plistKey:
		return fmt.Errorf("<key>%s</key> outside a <dict>", string(v))
	case []any:
		for _, e := range v {
			if err := checkNoKeys(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range v {
			if err := checkNoKeys(e); err != nil {
				return err
			}
		}
	}
	return nil
}

const plistHead = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
`

// TestPlistLint shows the checker refuses what plutil -lint refuses.
func TestPlistLint(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"every type", `<dict><key>s</key><string>a &amp; b</string><key>i</key><integer>-3</integer><key>r</key><real>1.5</real>
			<key>t</key><true/><key>f</key><false/><key>d</key><date>2024-01-02T03:04:05Z</date><key>b</key><data>aGk=</data>
			<key>a</key><array><string>x</string><dict/></array></dict>`, true},
		{"unclosed element", `<dict><key>a</key><string>x</dict>`, false},
		{"key without a value", `<dict><key>a</key></dict>`, false},
		{"two keys in a row", `<dict><key>a</key><key>b</key></dict>`, false},
		{"duplicate key", `<dict><key>a</key><true/><key>a</key><false/></dict>`, false},
		{"value without a key", `<dict><string>x</string><true/></dict>`, false},
		{"bad integer", `<integer>12a</integer>`, false},
		{"bad real", `<real>one</real>`, false},
		{"bad date", `<date>2024-01-02</date>`, false},
		{"bad data", `<data>!!!</data>`, false},
		{"unknown element", `<dict><key>a</key><yes/></dict>`, false},
		{"text in a dict", `<dict>stray<key>a</key><true/></dict>`, false},
		{"true with text", `<true>yes</true>`, false},
		{"two root values", `<true/><false/>`, false},
		{"no value", ``, false},
		{"key at the top", `<key>a</key>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := parsePlist([]byte(plistHead + tt.body + "\n</plist>\n"))
			if err == nil {
				err = checkNoKeys(v)
			}
			if (err == nil) != tt.ok {
				t.Errorf("parsePlist: %v, want ok = %v", err, tt.ok)
			}
		})
	}
	if _, err := parsePlist([]byte(plistHead + "<true/></plist><plist><true/></plist>")); err == nil {
		t.Error("two <plist> roots accepted")
	}
}

// TestInfoPlist checks the bundle's Info.plist: what makes Hearth a
// menu-bar app (LSUIElement: no Dock icon) and what build.sh and the
// LaunchAgent rely on.
func TestInfoPlist(t *testing.T) {
	m := readPlist(t, filepath.Join("..", "Info.plist"))
	want := map[string]any{
		"CFBundleIdentifier":         bundleID,
		"CFBundleExecutable":         "hearth",
		"CFBundleName":               "Hearth",
		"CFBundlePackageType":        "APPL",
		"CFBundleIconFile":           "Hearth",
		"CFBundleShortVersionString": strings.TrimSuffix(version, "-dev"),
		"LSUIElement":                true,
		"NSHighResolutionCapable":    true,
	}
	for k, w := range want {
		if m[k] != w {
			t.Errorf("%s = %#v, want %#v", k, m[k], w)
		}
	}
	min, _ := m["LSMinimumSystemVersion"].(string)
	if major, err := strconv.Atoi(strings.Split(min, ".")[0]); err != nil || major < 11 {
		t.Errorf("LSMinimumSystemVersion = %q, want 11 or later (the first with arm64)", min)
	}
	if v, _ := m["CFBundleVersion"].(string); !regexp.MustCompile(`^\d+(\.\d+){0,2}$`).MatchString(v) {
		t.Errorf("CFBundleVersion = %q, want up to three integers", v)
	}
}

// TestEntitlements checks the hardened runtime's entitlements are exactly
// the ones Hearth needs.
func TestEntitlements(t *testing.T) {
	m := readPlist(t, filepath.Join("..", "entitlements.plist"))
	want := []string{
		"com.apple.security.network.server",
		"com.apple.security.network.client",
		"com.apple.security.files.user-selected.read-only",
	}
	for _, k := range want {
		if m[k] != true {
			t.Errorf("%s = %#v, want true", k, m[k])
		}
	}
	if len(m) != len(want) {
		t.Errorf("entitlements %v, want only %v", m, want)
	}
}
