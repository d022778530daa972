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
   * The producer settings of every peer, spelled out: the Kafka 4 client defaults, which are also
   * what boardstream's Spark Kafka sink and Quix Streams' librdkafka producer use.
   */
  static Map<String, Object> producerSettings() {
    return Map.of("acks", "all", "linger.ms", 5, "compression.type", "none");
  }
}
