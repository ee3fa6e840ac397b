"""End-to-end tests in a real browser (a package, so that its conftest does not
shadow tests/conftest.py, which the integration tests import as `conftest`)."""
