"""User-facing errors. The CLI prints these as one line; anything else is a bug (with a trace)."""


class SeerError(ValueError):
    """A problem with the user's input (files, options, prompts) and how to fix it."""


class CheckpointError(SeerError):
    """The model folder is missing, incomplete, or does not match the architecture."""
