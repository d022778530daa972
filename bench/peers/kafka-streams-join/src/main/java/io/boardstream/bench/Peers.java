package io.boardstream.bench;

import java.util.Map;
import java.util.Properties;

/** Client settings every Java peer shares, so the peers differ only in what they compute. */
final class Peers {
  private Peers() {}

  static Properties clientConfig(String bootstrap) {
    Properties config = new Properties();
    config.put("bootstrap.servers", bootstrap);
    return config;
  }

  /**
   * The producer settings of every peer, spelled out: those of boardstream's Spark Kafka sink
   * (boardstream.settings.SINK_BATCHING) and of the Quix Streams peer's librdkafka producer.
   */
  static Map<String, Object> producerSettings() {
    return Map.of(
        "acks", "all", "batch.size", 262_144, "linger.ms", 5, "compression.type", "none");
  }
}
