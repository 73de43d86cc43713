"""html_text turns documentation HTML into plain paragraphs for the starter
corpus: navigation, sidebars, tables of contents, scripts and images are
skipped, <pre> blocks keep their layout, list items go one per line."""

import html.parser
import re

from text_norm import norm_text, paragraphs

BLOCK = {"p", "div", "section", "article", "br", "li", "ul", "ol", "dl", "dt", "dd",
         "h1", "h2", "h3", "h4", "h5", "h6", "table", "tr", "blockquote", "pre",
         "hr", "figure", "figcaption", "caption", "title", "main", "body"}
SKIP_TAGS = {"script", "style", "head", "svg", "nav", "noscript", "form", "button",
             "select", "textarea", "map", "object", "iframe", "img"}
SKIP_CLASS = {"sphinxsidebar", "related", "footer", "navheader", "navfooter",
              "headerlink", "toc", "nosearch", "menu", "search", "breadcrumb",
              "version_switcher_placeholder", "language_switcher_placeholder",
              "mobile-nav", "nav-content", "copyright", "fancy-toc1", "fancy-toc2",
              "fancy-toc3", "fancy_toc", "tabs", "mainmenu", "submenu",
              "searchbox", "sidebar", "linenos", "legalnotice", "toctree-wrapper",
              "contents"}
SKIP_ID = {"hd", "ft", "sidebar", "global-nav", "breadcrumbs"}
VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed",
        "param", "source", "track", "wbr"}


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out = []
        self.stack = []  # (tag, skipping)
        self.skip = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = set((a.get("class") or "").split())
        role = a.get("role") or ""
        skip = (tag in SKIP_TAGS or bool(cls & SKIP_CLASS) or a.get("id") in SKIP_ID
                or role in ("navigation", "search", "contentinfo"))
        if tag in VOID:
            if tag in BLOCK and not self.skip:
                self.out.append("\n")
            return
        self.stack.append((tag, skip))
        if skip:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if not self.skip:
            if tag in BLOCK:
                self.out.append("\n\n" if tag not in ("li", "dd", "tr", "br") else "\n")
            if tag == "li":
                self.out.append("- ")
            if tag in ("td", "th"):
                self.out.append(" | ")

    def handle_endtag(self, tag):
        # Pop to the matching tag (tolerates unclosed <p>, <li>).
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for t, s in self.stack[i:]:
                    if s:
                        self.skip -= 1
                    if t == "pre":
                        self.pre -= 1
                del self.stack[i:]
                break
        else:
            return
        if not self.skip and tag in BLOCK:
            self.out.append("\n\n")

    def handle_data(self, data):
        if self.skip:
            return
        if self.pre:
            self.out.append("\x01" + data.replace("\n", "\x02").replace(" ", "\x04") + "\x03")
        else:
            self.out.append(re.sub(r"\s+", " ", data))


def html_to_text(src):
    p = _Text()
    p.feed(src)
    p.close()
    s = "".join(p.out)
    # Preformatted runs keep their newlines; elsewhere whitespace collapses.
    s = re.sub(r"[ ]*\n[ ]*", "\n", s)
    s = re.sub(r"[ ]{2,}", " ", s)
    s = s.replace("\x03\x01", "").replace("\x01", "\n\n").replace("\x03", "\n\n").replace("\x02", "\n")
    s = norm_text(s.replace("\x04", " "))
    out = []
    for p in paragraphs(s):
        if not p.strip(" |-"):
            continue
        # Consecutive list items form one paragraph, one item a line.
        if p.startswith("- ") and out and out[-1].startswith("- "):
            out[-1] += "\n" + p
        else:
            out.append(p)
    return out
