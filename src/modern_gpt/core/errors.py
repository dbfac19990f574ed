"""The two kinds of bad input. Each message is one line naming the setting or file and what is allowed."""


class ConfigError(ValueError):
    """A bad setting: the field, what it got, what is allowed."""


class DataError(ValueError):
    """A bad corpus or data file: the path, what is wrong with it."""
