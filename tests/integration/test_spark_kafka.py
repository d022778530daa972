"""Spark's official Kafka connector, from the fetched jars, reads and writes the real broker."""

from __future__ import annotations

from boardstream.kafka.clients import admin_client
from boardstream.kafka.topics import TopicSpec, create_topics


def test_batch_write_then_read_round_trips(kafka, spark) -> None:
    create_topics(admin_client(kafka), kafka, [TopicSpec("spark-rt", 2, 1)])
    rows = [(f"k{i}", f"v{i}") for i in range(50)]
    options = kafka.to_spark_kafka_options()
    spark.createDataFrame(rows, "key string, value string").write.format("kafka").options(
        **options
    ).option("topic", "spark-rt").save()
    read = (
        spark.read.format("kafka")
        .options(**options)
        .option("subscribe", "spark-rt")
        .option("kafka.isolation.level", "read_committed")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition")
    )
    got = read.collect()
    assert sorted((r.key, r.value) for r in got) == sorted(rows)
    assert {r.partition for r in got} == {0, 1}


def test_streaming_available_now_copies_a_topic(kafka, spark, tmp_path) -> None:
    create_topics(
        admin_client(kafka), kafka, [TopicSpec("spark-src", 3, 1), TopicSpec("spark-dst", 3, 1)]
    )
    options = kafka.to_spark_kafka_options()
    spark.createDataFrame(
        [(str(i), str(i * i)) for i in range(30)], "key string, value string"
    ).write.format("kafka").options(**options).option("topic", "spark-src").save()
    query = (
        spark.readStream.format("kafka")
        .options(**options)
        .option("subscribe", "spark-src")
        .option("startingOffsets", "earliest")
        .load()
        .select("key", "value")
        .writeStream.format("kafka")
        .options(**options)
        .option("topic", "spark-dst")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None
    copied = spark.read.format("kafka").options(**options).option("subscribe", "spark-dst").load()
    assert sorted(
        copied.selectExpr("CAST(value AS STRING)").rdd.map(lambda r: int(r[0])).collect()
    ) == sorted(i * i for i in range(30))
