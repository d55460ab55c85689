"""fq_openapi.py: fairqd's answers checked against api/openapi.yaml.

Every answer the API tests get through APITest.api (fq_api.py) is checked
here: its route and method are in the document, its status is one the
operation lists, and its JSON body validates against the schema the
document gives for that status (JSON Schema 2020-12, OpenAPI 3.1's
dialect). An answer to a path or method the document does not have must
be the router's 404 or 405 with the error body. So the whole API suite,
which drives every route through its successes and its errors, is also
the test of the document; api.openapi_coverage then checks, from the
answers each test program wrote down (FQ_OPENAPI_ANSWERS), that every
operation was answered with success at least once.

Run as a program, it is that coverage check:
    fq_openapi.py --spec api/openapi.yaml --answers FILE
or the check that API.md and the document name the same routes:
    fq_openapi.py --spec api/openapi.yaml --api-md api/API.md
"""

import argparse
import os
import re
import sys
import urllib.parse

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC_PATH = os.path.join(HERE, "..", "..", "api", "openapi.yaml")
METHODS = ("get", "put", "post", "delete", "patch")
# Where each test program appends the answers it checked, one per line
ANSWERS_ENV = "FQ_OPENAPI_ANSWERS"
# format: date-time as the API writes times (RFC 3339 in UTC); jsonschema
# checks no format by itself
DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks("date-time")(lambda value: not isinstance(value, str) or bool(DATE_TIME.match(value)))


class Spec:
    """The OpenAPI document, its routes made into patterns."""

    def __init__(self, path=SPEC_PATH):
        with open(path, encoding="utf-8") as f:
            self.doc = yaml.safe_load(f)
        self.routes = []
        for template, item in self.doc["paths"].items():
            # A template's {name} is one path segment, never empty
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(pattern), template, item))
        # Literal routes before templated ones (/v1/messages/bulk before
        # /v1/messages/{id}), as the router matches them
        self.routes.sort(key=lambda route: route[1].count("{"))
        self.answers = os.environ.get(ANSWERS_ENV)

    def operations(self):
        """Every (METHOD, template) of the document."""
        return {(method.upper(), template) for template, item in self.doc["paths"].items()
                for method in METHODS if method in item}

    def _resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise ValueError(f"a reference outside the document: {ref}")
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _validate(self, schema, payload):
        """None, or what is wrong with payload by schema; the document's
        components go along, so that its references resolve."""
        root = dict(schema)
        root["components"] = self.doc.get("components", {})
        validator = jsonschema.Draft202012Validator(root, format_checker=FORMATS)
        errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(the body)"
        return f"{where}: {first.message[:300]}"

    def route(self, method, path):
        """(template, path item) of path without its query, or (None,
        None). As the router: of the routes the path matches, literal
        segments first, the first that has the method (GET
        /v1/messages/bulk is GET /v1/messages/{id} with the id "bulk"),
        else the first."""
        bare = urllib.parse.urlsplit(path).path
        matches = [(template, item) for pattern, template, item in self.routes
                   if pattern.match(bare)]
        for template, item in matches:
            if method.lower() in item:
                return template, item
        return matches[0] if matches else (None, None)

    def check(self, method, path, status, payload, content_type=None):
        """None when the answer agrees with the document, else what does not.
        content_type, when given, is the answer's Content-Type header."""
        template, item = self.route(method, path)
        operation = item.get(method.lower()) if item else None
        self._note(method, template if operation else None, status)
        if operation is None:
            # The router's answers to what no route has (see info.description):
            # 400 for a segment it will not take (%2F, %00, bad UTF-8) first
            expected = 405 if item else 404
            if status not in (400, expected):
                where = "no method" if item else "no route"
                return (f"{method} {path}: {where} in the document, answered {status} "
                        f"(the router answers {expected}, or 400 to a malformed segment)")
            return self._check_error(f"{method} {path}", payload)
        responses = operation.get("responses", {})
        response = responses.get(str(status)) or responses.get(f"{status // 100}XX") \
            or responses.get("default")
        if response is None:
            return (f"{method} {template}: status {status} is not one the document lists "
                    f"({', '.join(sorted(responses))}); body {payload!r:.300}")
        response = self._resolve(response)
        content = response.get("content") or {}
        json_types = [t for t in content if t.split(";")[0].strip() == "application/json"]
        if isinstance(payload, (dict, list)):
            if not json_types:
                return (f"{method} {template} {status}: a JSON body, where the document "
                        f"gives {', '.join(content) or 'no body'}")
            if content_type is not None and not content_type.startswith("application/json"):
                return (f"{method} {template} {status}: a JSON body sent as "
                        f"{content_type!r}")
            media = content[json_types[0]]
            if "schema" not in media:
                return f"{method} {template} {status}: the document gives JSON with no schema"
            problem = self._validate(self._resolve(media["schema"]), payload)
            return f"{method} {template} {status}: {problem}" if problem else None
        if json_types and len(json_types) == len(content) and method != "HEAD":
            what = "no body" if payload in ("", None) else "not a JSON object or array"
            return f"{method} {template} {status}: {what}, where the document gives JSON"
        return None

    def _check_error(self, what, payload):
        schema = self.doc["components"]["schemas"].get("Error")
        if schema is None:
            return None
        problem = self._validate(schema, payload)
        return f"{what}: error body: {problem}" if problem else None

    def _note(self, method, template, status):
        if self.answers and template:
            with open(self.answers, "a", encoding="utf-8") as f:
                f.write(f"{method} {template} {status}\n")


_SPEC = None
# A line of the answers file that names a test program that ran
PROGRAM_MARK = "PROGRAM"
# ctest's SKIP_RETURN_CODE for api.openapi_coverage
SKIPPED = 77


def note_program(name):
    """Writes down that the test program name ran (coverage counts only
    a run of them all)."""
    answers = os.environ.get(ANSWERS_ENV)
    if answers:
        with open(answers, "a", encoding="utf-8") as f:
            f.write(f"{PROGRAM_MARK} {name}\n")


def spec():
    """The document, read once per process."""
    global _SPEC
    if _SPEC is None:
        _SPEC = Spec()
    return _SPEC


def coverage(spec_path, answers_path, programs):
    """Exit status 0 when every operation of the document was answered
    with a success (2xx) by some test; else 1, naming those that were not;
    SKIPPED when not every one of programs ran (ctest -R of a few)."""
    document = Spec(spec_path)
    succeeded = set()
    answered = 0
    ran = set()
    if os.path.exists(answers_path):
        with open(answers_path, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[0] == PROGRAM_MARK:
                    ran.add(parts[1])
                elif len(parts) == 3:
                    answered += 1
                    if parts[2].startswith("2"):
                        succeeded.add((parts[0], parts[1]))
    absent = sorted(set(programs) - ran)
    if absent:
        print(f"skipped: coverage is of all the API tests, and {', '.join(absent)} did not run")
        return SKIPPED
    missing = sorted(document.operations() - succeeded, key=lambda op: (op[1], op[0]))
    total = len(document.operations())
    print(f"{answered} answers checked against the document; {total - len(missing)} of "
          f"{total} operations answered with success")
    for method, template in missing:
        print(f"  never answered with success: {method} {template}")
    return 1 if missing else 0


# A route as API.md names it in a heading or a table row: `GET /v1/x`, and
# after it, paths alone that take its method (`/pause`, a last segment)
MD_ROUTE = re.compile(r"`(?:(GET|POST|PUT|PATCH|DELETE) )?((?:/|\.\.\./)[^`\s?]*)")
# What `...` stands for in API.md's suppression routes: a tenant's list, or
# the global one
MD_ELLIPSIS = ("/v1/tenants/{name}", "/v1")
MD_TOP = ("/v1/", "/u/", "/healthz", "/metrics", "/console")


def api_md_routes(path):
    """Every (METHOD, path) API.md's headings and tables name."""
    routes = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not (line.startswith("#") or line.startswith("| `")):
                continue
            method, last = None, None
            for verb, route in MD_ROUTE.findall(line):
                if verb:
                    method = verb
                elif method is None:
                    continue
                if last and not route.startswith(MD_TOP) and not route.startswith("..."):
                    route = last.rsplit("/", 1)[0] + route  # `/pause` after .../cancel
                last = route
                for full in ([p + route[3:] for p in MD_ELLIPSIS] if route.startswith("...")
                             else [route]):
                    routes.add((method, full))
    return routes


def _segments_match(document, named):
    """Whether API.md's path named is the document's template document: a
    {parameter} of the document's takes any segment (`/v1/holds/all` is
    /v1/holds/{scope})."""
    a, b = document.strip("/").split("/"), named.strip("/").split("/")
    return len(a) == len(b) and all(x == y or x.startswith("{") for x, y in zip(a, b))


def agreement(spec_path, api_md_path):
    """0 when every route of API.md is an operation of the document and
    every operation is in API.md; else 1, naming the others."""
    operations = Spec(spec_path).operations()
    named = api_md_routes(api_md_path)
    unknown = sorted(r for r in named
                     if not any(m == r[0] and _segments_match(t, r[1]) for m, t in operations))
    untold = sorted(o for o in operations
                    if not any(m == o[0] and _segments_match(o[1], p) for m, p in named))
    print(f"API.md names {len(named)} routes; the document has {len(operations)} operations")
    for method, path in unknown:
        print(f"  in API.md, not in the document: {method} {path}")
    for method, path in untold:
        print(f"  in the document, not in API.md: {method} {path}")
    return 1 if unknown or untold else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=SPEC_PATH)
    parser.add_argument("--answers")
    parser.add_argument("--api-md", help="check that API.md names the document's routes")
    parser.add_argument("--programs", nargs="*", default=[],
                        help="the test programs whose answers coverage needs")
    parser.add_argument("--reset", action="store_true",
                        help="empty the answers file (before the API tests run)")
    args = parser.parse_args()
    if args.api_md:
        return agreement(args.spec, args.api_md)
    if not args.answers:
        parser.error("--answers or --api-md is needed")
    if args.reset:
        open(args.answers, "w", encoding="utf-8").close()
        Spec(args.spec)  # The document must at least read
        return 0
    return coverage(args.spec, args.answers, args.programs)


if __name__ == "__main__":
    sys.exit(main())
