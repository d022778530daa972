"""Errors a user can fix: the CLI prints their message and exits non-zero, with no traceback."""


class BoardstreamError(Exception):
    """A problem with input, configuration or the environment, described for the user."""


class BrokerUnreachableError(BoardstreamError):
    """No Kafka broker answered at the configured bootstrap servers in time."""


class KafkaAuthenticationError(BoardstreamError):
    """The broker rejected the configured SASL credentials, or its certificate was not trusted."""


class UnknownTopicError(BoardstreamError):
    """A topic the command needs does not exist on the broker."""


class InvalidOptionError(BoardstreamError, ValueError):
    """An option a domain object refuses, said in the domain's words; ``options`` names the
    options concerned (as the message writes them), so a front end can name its own flags."""

    def __init__(self, message: str, *options: str) -> None:
        super().__init__(message)
        self.options = options


class ServiceUnreachableError(BoardstreamError):
    """A service a job needs (its broker, its database) did not answer before the job started:
    refused in seconds, before Spark (exit 2), rather than failing minutes into the run."""


class PipelineDeclarationError(BoardstreamError):
    """A pipeline declaration the platform refuses: one line naming the file, the key and the
    problem, said before anything starts (exit 2)."""
