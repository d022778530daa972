"""Errors a user can fix: the CLI prints their message and exits non-zero, with no traceback."""


class BoardstreamError(Exception):
    """A problem with input, configuration or the environment, described for the user."""


class BrokerUnreachableError(BoardstreamError):
    """No Kafka broker answered at the configured bootstrap servers in time."""


class KafkaAuthenticationError(BoardstreamError):
    """The broker rejected the configured SASL credentials, or its certificate was not trusted."""


class UnknownTopicError(BoardstreamError):
    """A topic the command needs does not exist on the broker."""
