"""The one exception type a user sees as a one-line error instead of a traceback."""


class UserError(Exception):
    """Bad input or environment: the message says what to fix. Exit status 2 unless given."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
