"""The breaking changes Optic found, each checked against CHANGELOG.md.

Run by scripts/contract-diff.sh after `optic diff RELEASED NEW --check` (with
`CI=true`, Optic writes its verdicts to ci-run-details.json):

    python3 scripts/contract_diff.py ci-run-details.json RELEASED NEW CHANGELOG.md
    python3 scripts/contract_diff.py --self-test

Every failed check of Optic's `breaking-changes` rules is a breaking change of
one operation. They are grouped: every result of an operation that is removed
is that removal; the results of one rule with one message in one changed
component schema (say a property removed from `TagV3`, seen in each operation
that answers a tag) are one change.

A change is listed when a bullet of CHANGELOG.md's `## Unreleased` section
that contains `**Breaking` names its operation as `METHOD /path` (path
parameters' names aside: `/v3/tags/{id}` and `/v3/tags/{tagId}` are one path)
or, for a change inside a component schema, that schema's name in backticks.
A bullet runs from its `- ` at the start of a line to the next one (its own
indented sub-bullets included) or the next heading.

Prints each change and whether it is listed; exits 1 if any is not, 2 if Optic
could not compare the documents.
"""

import io
import json
import re
import sys

METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE")
OPERATION = re.compile(r"\b(%s) (/\S*)" % "|".join(METHODS))
NAMED_OPERATION = re.compile(r"\b(%s)\s+(/[^\s`'\",;)]*)" % "|".join(METHODS))
SCHEMA_REF = "#/components/schemas/"
REMOVAL_RULE = "prevent operation removal"


def normalize(method, path):
    """`METHOD /path`, with every path parameter written `{}`."""
    return "%s %s" % (method, re.sub(r"\{[^}]*\}", "{}", path.rstrip(".:")))


def tokens(pointer):
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def resolve(document, ref):
    node = document
    for token in tokens(ref[1:]):
        node = node[token]
    return node


def walk(document, pointer):
    """The component schemas a JSON pointer of the dereferenced document passes
    through in this one (outermost first), and the node it ends at (None when
    the document has no such place)."""
    node, chain, in_schema = document, [], False
    for token in tokens(pointer):
        while isinstance(node, dict) and token not in node and str(node.get("$ref", "")).startswith("#/"):
            ref = node["$ref"]
            if ref.startswith(SCHEMA_REF) and in_schema:
                chain.append(ref[len(SCHEMA_REF):])
            node = resolve(document, ref)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return chain, None
        in_schema = in_schema or token == "schema"
    if not in_schema:
        return chain, None
    return chain, node


def reachable(document, node):
    """The component schemas a schema refers to, directly or not."""
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(SCHEMA_REF):
                name = ref[len(SCHEMA_REF):]
                if name not in found:
                    found.append(name)
                    stack.append(document.get("components", {}).get("schemas", {}).get(name))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def changed_schemas(released, new):
    old = released.get("components", {}).get("schemas", {})
    now = new.get("components", {}).get("schemas", {})
    return {name for name in set(old) | set(now) if old.get(name) != now.get(name)}


def schemas_of(result, released, new, changed):
    """The changed component schemas a result lies in: the innermost changed
    schema on its path, else the changed ones its place refers to. None for
    what is not inside a schema (an operation, a status code, a parameter)."""
    pointer = result.get("location", {}).get("jsonPath", "")
    first = released if result.get("location", {}).get("spec") == "before" else new
    on_path, below = [], []
    for document in (first, new if first is released else released):
        chain, node = walk(document, pointer)
        on_path += [name for name in chain if name in changed and name not in on_path]
        if node is not None:
            below += [name for name in reachable(document, node) if name in changed and name not in below]
    if on_path:
        return [on_path[-1]]
    return sorted(below)


def breaking_changes(details, released, new):
    """Optic's failed results, grouped: a list of
    {"rule", "message", "schemas", "operations"}."""
    results = []
    for spec in details.get("completed", []):
        for result in spec.get("comparison", {}).get("results", []):
            if result.get("passed") or result.get("exempted"):
                continue
            match = OPERATION.match(result.get("where", ""))
            if not match:
                raise SystemExit("contract_diff: a result without an operation: %r" % result.get("where"))
            results.append((match.group(1) + " " + match.group(2), result))
    removed = {operation for operation, result in results if result.get("name") == REMOVAL_RULE}
    changed = changed_schemas(released, new)
    groups = {}
    for operation, result in results:
        if operation in removed and result.get("name") != REMOVAL_RULE:
            continue  # a part of the removed operation
        schemas = () if operation in removed else tuple(schemas_of(result, released, new, changed))
        key = (result.get("name", ""), result.get("error", "").strip(), schemas)
        group = groups.setdefault(key, {"rule": key[0], "message": key[1], "schemas": list(schemas), "operations": []})
        if operation not in group["operations"]:
            group["operations"].append(operation)
    return list(groups.values())


def unreleased_breaking(changelog):
    """The operations (normalized) and the backticked names the `**Breaking`
    bullets of the `## Unreleased` section name."""
    section, inside = [], False
    for line in changelog.splitlines():
        if line.startswith("## "):
            inside = line[3:].strip().lower() == "unreleased"
            continue
        if inside:
            section.append(line)
    bullets, current = [], None
    for line in section:
        if line.startswith("#"):
            current = None
        elif re.match(r"[-*] ", line):
            current = [line]
            bullets.append(current)
        elif current is not None:
            current.append(line)
    operations, names = set(), set()
    for bullet in bullets:
        text = "\n".join(bullet)
        if "**Breaking" not in text:
            continue
        operations |= {normalize(method, path) for method, path in NAMED_OPERATION.findall(text)}
        names |= set(re.findall(r"`([^`\n]+)`", text))
    return operations, names


def check(change, listed_operations, listed_names):
    """The operations of a change left unlisted (none: the change is listed)."""
    if any(name in listed_names for name in change["schemas"]):
        return []
    return [op for op in change["operations"] if normalize(*op.split(" ", 1)) not in listed_operations]


def report(changes, changelog, out=sys.stdout):
    """Prints each change; the number of changes not listed."""
    listed_operations, listed_names = unreleased_breaking(changelog)
    unlisted = 0
    for change in changes:
        missing = check(change, listed_operations, listed_names)
        unlisted += bool(missing)
        where = "`%s`" % "`, `".join(change["schemas"]) if change["schemas"] else ", ".join(change["operations"])
        message = change["message"] if len(change["message"]) <= 240 else change["message"][:237] + "..."
        print("  %-10s %s: %s [%s]" % ("NOT LISTED" if missing else "listed", where, message, change["rule"]), file=out)
        if change["schemas"]:
            shown = change["operations"][:8]
            more = len(change["operations"]) - len(shown)
            print("             in %s%s" % (", ".join(shown), " and %d more" % more if more else ""), file=out)
        if missing and change["schemas"] and len(missing) < len(change["operations"]):
            print("             unlisted: %s" % ", ".join(missing), file=out)
    return unlisted


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    details_path, released_path, new_path, changelog_path = argv[1:]
    with open(details_path) as f:
        details = json.load(f)
    if details.get("failed"):
        for failure in details["failed"]:
            print("contract_diff: Optic could not compare %s: %s" % (failure.get("apiName"), failure.get("error")), file=sys.stderr)
        return 2
    with open(released_path) as f:
        released = json.load(f)
    with open(new_path) as f:
        new = json.load(f)
    with open(changelog_path) as f:
        changelog = f.read()
    changes = breaking_changes(details, released, new)
    if not changes:
        print("contract diff: no breaking change from %s to %s" % (released_path, new_path))
        return 0
    print("contract diff: %d breaking change%s from %s to %s:" % (len(changes), "" if len(changes) == 1 else "s", released_path, new_path))
    unlisted = report(changes, changelog)
    if unlisted:
        print("contract diff: %d not listed in %s. List each in its \"## Unreleased\" section, in a bullet that"
              " contains **Breaking, with what a client must do, naming the operation (`POST /v3/api-tokens`)"
              " or the schema in backticks (`TagV3`)." % (unlisted, changelog_path))
        return 1
    print("contract diff: every breaking change is listed in %s" % changelog_path)
    return 0


def self_test():
    """Two small documents and the results Optic gives for them (dereferenced
    paths, as in ci-run-details.json)."""
    error = {"type": "object", "properties": {"message": {"type": "string"}}}
    tag = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}, "color": {"type": "string"}}, "required": ["id", "name", "color"]}
    create = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    def body(name):
        return {"content": {"application/json": {"schema": {"$ref": SCHEMA_REF + name}}}}

    def document(tag, create, with_delete):
        paths = {
            "/tags": {
                "get": {"responses": {"200": body("TagList"), "default": body("Error")}},
                "post": {"requestBody": body("CreateTag"), "responses": {"201": body("Tag"), "default": body("Error")}},
            },
            "/tags/{id}": {"get": {"responses": {"200": body("Tag")}}},
        }
        if with_delete:
            paths["/tags/{id}"]["delete"] = {"responses": {"200": body("Tag")}}
        return {"openapi": "3.1.0", "paths": paths, "components": {"schemas": {
            "Error": error, "Tag": tag, "CreateTag": create,
            "TagList": {"type": "object", "properties": {"data": {"type": "array", "items": {"$ref": SCHEMA_REF + "Tag"}}}},
        }}}

    released = document(tag, create, True)
    new_tag = json.loads(json.dumps(tag))
    del new_tag["properties"]["color"]
    new_tag["required"].remove("color")
    new_create = json.loads(json.dumps(create))
    new_create["properties"]["kind"] = {"type": "string"}
    new_create["required"].append("kind")
    new = document(new_tag, new_create, False)

    def result(where, name, error, pointer, spec="before", passed=False):
        return {"where": where, "name": name, "error": error, "passed": passed, "exempted": False,
                "location": {"jsonPath": pointer, "spec": spec}, "severity": 2}

    gone = "cannot remove response property 'color'. This is a breaking change."
    details = {"completed": [{"comparison": {"results": [
        result("DELETE /tags/{id}", REMOVAL_RULE, "cannot remove an operation. This is a breaking change.", "/paths/~1tags~1{id}/delete"),
        result("DELETE /tags/{id}", "prevent removing response property", "cannot remove response property 'id'.",
               "/paths/~1tags~1{id}/delete/responses/200/content/application~1json/schema/properties/id"),
        result("DELETE /tags/{id}", "prevent response status code removal", "must not remove response status code 200.",
               "/paths/~1tags~1{id}/delete/responses/200"),
        result("GET /tags", "prevent removing response property", gone,
               "/paths/~1tags/get/responses/200/content/application~1json/schema/properties/data/items/properties/color"),
        result("POST /tags", "prevent removing response property", gone,
               "/paths/~1tags/post/responses/201/content/application~1json/schema/properties/color"),
        result("GET /tags/{id}", "prevent removing response property", gone,
               "/paths/~1tags~1{id}/get/responses/200/content/application~1json/schema/properties/color"),
        result("POST /tags request body: application/json property: kind", "prevent changing request property to required",
               "cannot add a required request property 'kind' to an existing operation.",
               "/paths/~1tags/post/requestBody/content/application~1json/schema/properties/kind", spec="after"),
        result("GET /tags", "prevent making response property optional", "", "/paths/~1tags/get/responses/200", passed=True),
    ]}}], "failed": [], "noop": []}

    checks = 0

    def expect(condition, what):
        nonlocal checks
        checks += 1
        if not condition:
            raise SystemExit("contract_diff self-test failed: " + what)

    changes = breaking_changes(details, released, new)
    by_rule = {c["rule"]: c for c in changes}
    expect(len(changes) == 3, "three changes, not %r" % changes)
    expect(by_rule[REMOVAL_RULE]["operations"] == ["DELETE /tags/{id}"] and by_rule[REMOVAL_RULE]["schemas"] == [],
           "the removed operation is one change, its parts in it: %r" % by_rule[REMOVAL_RULE])
    color = by_rule["prevent removing response property"]
    expect(color["schemas"] == ["Tag"], "the removed property is in `Tag` (through `TagList`): %r" % color)
    expect(color["operations"] == ["GET /tags", "POST /tags", "GET /tags/{id}"], "in the three answers: %r" % color)
    kind = by_rule["prevent changing request property to required"]
    expect(kind["schemas"] == ["CreateTag"] and kind["operations"] == ["POST /tags"], "the new required property: %r" % kind)
    expect(changed_schemas(released, new) == {"Tag", "CreateTag"}, "changed schemas")
    expect(walk(released, "/paths/~1tags~1{id}/delete/responses/200") == ([], None), "a response is no schema")

    def unlisted(changelog):
        return report(changes, changelog, out=io.StringIO())

    header = "# Changelog\n\nText naming `Tag` and DELETE /tags/{id} **Breaking.\n\n"
    expect(unlisted(header + "## Unreleased\n\n### Added\n- Nothing.\n") == 3, "an empty section lists nothing")
    expect(unlisted(header + "## Unreleased\n\n- **Breaking: a `Tag` has no `color`.** Also `CreateTag` wants `kind`;"
                    " `DELETE /tags/{tagId}` is gone.\n") == 0, "schemas and an operation (any parameter name)")
    expect(unlisted(header + "## Unreleased\n\n- Tags lose `color` (`Tag`), `CreateTag`, DELETE /tags/{id}.\n") == 3,
           "a bullet without **Breaking lists nothing")
    expect(unlisted(header + "## Unreleased\n\n## 1.0.0\n\n- **Breaking:** `Tag`, `CreateTag`, DELETE /tags/{id}\n") == 3,
           "a released section lists nothing")
    expect(unlisted(header + "## Unreleased\n\n- **Breaking: no more deletes, no `color`:**\n  - DELETE /tags/{id}\n"
                    "  - GET /tags, POST /tags, GET /tags/{id}.\n- Other.\n\n### Fixed\n- **Breaking: POST /tags wants"
                    " `kind`.**\n") == 0, "operations, in sub-bullets too")
    expect(unlisted(header + "## Unreleased\n\n- **Breaking:** GET /tags and POST /tags lose `color`; `CreateTag`;"
                    " DELETE /tags/{id}.\n") == 1, "one operation of three left out")
    print("contract_diff self-test: %d checks passed" % checks)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
