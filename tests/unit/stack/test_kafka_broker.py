"""The local broker's configuration: cluster ids the storage tool accepts, the listeners the
settings ask for."""

from __future__ import annotations

import re

import pytest

from boardstream.errors import BoardstreamError
from boardstream.stack.kafka_broker import KafkaBroker, new_cluster_id
from tests.fixtures import isolated_settings


def test_cluster_ids_never_look_like_an_option() -> None:
    ids = [new_cluster_id() for _ in range(5_000)]  # a leading "-" would come ~78 times
    assert not [i for i in ids if i.startswith("-")]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_sasl_settings_make_the_local_broker_require_scram(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path,
        security_protocol="SASL_PLAINTEXT",
        sasl_username="boardstream",
        sasl_password="pw123",
    )
    lines = KafkaBroker(settings).server_properties().splitlines()
    port = settings.kafka_port
    assert (
        f"listeners=SASL_PLAINTEXT://localhost:{port},CONTROLLER://localhost:{settings.controller_port}"
        in lines
    )
    assert "inter.broker.listener.name=SASL_PLAINTEXT" in lines
    assert "sasl.enabled.mechanisms=SCRAM-SHA-512" in lines
    assert (
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="boardstream" password="pw123";'
    ) in lines


def test_tls_settings_give_the_local_broker_a_certificate_of_its_own(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path, security_protocol="SASL_SSL", sasl_username="u", sasl_password="p"
    )
    broker = KafkaBroker(settings)
    broker.tls.ensure()
    lines = broker.server_properties().splitlines()
    assert f"listeners=SASL_SSL://localhost:{settings.kafka_port}," in lines[3]
    assert "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=" in "\n".join(lines)
    assert f"ssl.keystore.location={broker.tls.keystore}" in lines
    assert f"ssl.keystore.password={broker.tls.password()}" in lines
    assert broker.tls.password_file.stat().st_mode & 0o077 == 0
    pem = broker.tls.certificate.read_text()
    assert pem.startswith("-----BEGIN CERTIFICATE-----"), pem[:100]
    broker.tls.ensure()  # made once: a restart keeps the certificate clients already trust
    assert broker.tls.certificate.read_text() == pem


def test_the_local_broker_refuses_what_it_cannot_serve(tmp_path) -> None:
    settings = isolated_settings(
        tmp_path,
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_username="u",
        sasl_password="p",
    )
    with pytest.raises(BoardstreamError, match="SCRAM only, not SASL_SSL with PLAIN"):
        KafkaBroker(settings).server_properties()
