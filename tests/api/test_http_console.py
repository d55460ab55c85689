#!/usr/bin/python3
"""test_http_console.py: the web console's files as fairqd serves them
(docs/console.md): the page at /console and /console/, each file it loads
with its media type, and on every answer the headers that keep the page
safe: a Content-Security-Policy with no inline script, no framing and
Trusted Types with no policy, no cookie, no caching of an old version. A
file the console lacks, a deeper path, an empty segment (a doubled or
trailing '/') and another method get the router's errors; the token a
browser may send does not matter, the files being public. What the page
does in a browser is e2e.console's.
"""

import html.parser
import re
import sys

sys.dont_write_bytecode = True  # No __pycache__ in the source tree
import fq_api  # noqa: E402
from fq_api import APITest  # noqa: E402


class _Loads(html.parser.HTMLParser):
    """The files a page loads (script src, link href), and its inline
    scripts and style attributes."""

    def __init__(self):
        super().__init__()
        self.files, self.inline_scripts, self.styled, self.handlers = [], 0, [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            if attrs.get("src"):
                self.files.append(attrs["src"])
            else:
                self._in_script = True
        if tag == "link" and attrs.get("rel") == "stylesheet":
            self.files.append(attrs["href"])
        if "style" in attrs:
            self.styled.append(tag)
        self.handlers += [name for name in attrs if name.startswith("on")]

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline_scripts += 1

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False


class ConsoleFilesTest(APITest):

    def assert_console_headers(self, headers, what):
        policy = headers.get("Content-Security-Policy", "")
        directives = {part.split()[0]: part.split()[1:]
                      for part in (p.strip() for p in policy.split(";")) if part}
        self.assertEqual(directives.get("default-src"), ["'none'"], f"{what}: {policy}")
        self.assertEqual(directives.get("script-src"), ["'self'"], f"{what}: {policy}")
        self.assertEqual(directives.get("connect-src"), ["'self'"], f"{what}: {policy}")
        self.assertEqual(directives.get("frame-ancestors"), ["'none'"], f"{what}: {policy}")
        # Trusted Types with no policy: no HTML string ever reaches a DOM sink
        self.assertEqual(directives.get("require-trusted-types-for"), ["'script'"],
                         f"{what}: {policy}")
        self.assertEqual(directives.get("trusted-types"), ["'none'"], f"{what}: {policy}")
        self.assertNotIn("unsafe-inline", policy, what)
        self.assertNotIn("unsafe-eval", policy, what)
        self.assertEqual(headers.get("X-Frame-Options"), "DENY", what)
        self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff", what)
        self.assertEqual(headers.get("Referrer-Policy"), "no-referrer", what)
        self.assertIn("no-cache", headers.get("Cache-Control", ""), what)
        self.assertIsNone(headers.get("Set-Cookie"), f"{what}: a cookie was set")

    def test_page_and_every_file_it_loads(self):
        """/console and /console/ give the page; each script and style it
        loads, and each module those import, is there with its type and
        the same headers; the page runs no inline script."""
        self.start()
        status, headers, page = self.api("GET", "/console", token=None)
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/html"), headers["Content-Type"])
        self.assert_console_headers(headers, "/console")
        self.assertIn('id="signin"', page)
        self.assertEqual(self.api("GET", "/console/", token=None)[2], page)

        loads = _Loads()
        loads.feed(page)
        self.assertEqual(loads.inline_scripts, 0, "the page has an inline script")
        self.assertEqual(loads.styled, [], "elements with a style attribute")
        self.assertEqual(loads.handlers, [], "inline event handlers")
        self.assertIn("/console/console.js", loads.files)
        self.assertIn("/console/console.css", loads.files)

        # Every module the scripts import, followed from the page's own
        seen, todo = set(), list(loads.files)
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            status, headers, text = self.api("GET", path, token=None)
            self.assertEqual(status, 200, f"{path}: {text!r:.300}")
            self.assert_console_headers(headers, path)
            kind = "text/javascript" if path.endswith(".js") else "text/css"
            self.assertTrue(headers["Content-Type"].startswith(kind),
                            f"{path}: {headers['Content-Type']}")
            for module in re.findall(r'from "\./([a-z_]+\.js)"', text):
                todo.append(f"/console/{module}")
        self.assertGreaterEqual(len(seen), 8, sorted(seen))

    def test_files_are_public_and_the_router_guards_the_rest(self):
        """The files need no token and ignore a wrong one; a file the
        console lacks is a 404, a deeper path too, another method a 405,
        an escaped '/' a 400, each with the API's error body."""
        self.start()
        self.assertEqual(self.api("GET", "/console/console.js",
                                  token="fq_not-a-token")[0], 200)
        self.assert_error(self.api("GET", "/console/nothing.js", token=None), 404,
                          "a file the console lacks")
        self.assert_error(self.api("GET", "/console/../v1/tenants", token=None), 404,
                          "a path past the console")
        self.assert_error(self.api("GET", "/console/js/console.js", token=None), 404,
                          "a deeper path")
        answer = self.api("POST", "/console", token=None, body={})
        self.assert_error(answer, 405, "POST /console")
        self.assertEqual(answer[1].get("Allow"), "GET")
        self.assert_error(self.api("GET", "/console/a%2Fb.js", token=None), 400,
                          "an escaped '/'")
        # The API itself still wants its token
        self.assert_error(self.api("GET", "/v1/tenants", token=None), 401, "the API")

    def test_empty_segments_route_nowhere(self):
        """A trailing or doubled '/' is an empty segment, which only
        /console/ has a route for: /console//, /v1/tenants/ and
        /v1//tenants are 404s, never the page, the list or a tenant named
        ""; the token is good, so it is the router that answers."""
        self.start()
        for path in ("/console//", "/v1/tenants/", "/v1//tenants"):
            self.assert_error(self.api("GET", path), 404, f"GET {path}")
        # Their neighbours without the extra '/' still answer
        self.assertEqual(self.api("GET", "/console/", token=None)[0], 200)
        self.assertEqual(self.api("GET", "/v1/tenants")[0], 200)


if __name__ == "__main__":
    fq_api.main()
