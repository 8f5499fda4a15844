"""Settings of the ledger web service."""

APP_NAME = "ledger"
DEBUG = False
WORKERS = 4
DEFAULT_PORT = 8137
REQUEST_TIMEOUT_SECONDS = 30
DATABASE_FILE = "ledger.db"
