package io.boardstream.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;

/**
 * The classic Kafka Streams enrichment: the board stream re-keyed by member_id, inner-joined with
 * the member KTable, re-keyed by board id and written out. A board whose member is not in the
 * table when the board is processed (late or missing member) is dropped: that is the inner join's
 * semantics, which bench/compare.py counts as dropped boards.
 *
 * <p>Usage: BoardDetailJoin BOOTSTRAP MEMBER_TOPIC BOARD_TOPIC OUTPUT_TOPIC APPLICATION_ID STATE_DIR
 */
public final class BoardDetailJoin {
  private static final ObjectMapper JSON = new ObjectMapper();

  private BoardDetailJoin() {}

  public static void main(String[] args) {
    if (args.length != 6) {
      System.err.println(
          "usage: BoardDetailJoin BOOTSTRAP MEMBER_TOPIC BOARD_TOPIC OUTPUT_TOPIC APPLICATION_ID"
              + " STATE_DIR");
      System.exit(2);
    }
    Properties config = Peers.clientConfig(args[0]);
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[4]);
    config.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
    config.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    config.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    // The member topic is the table's changelog: no second copy of every profile.
    config.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
    config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    config.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    Peers.producerSettings()
        .forEach((key, value) -> config.put(StreamsConfig.producerPrefix(key), value));

    StreamsBuilder builder = new StreamsBuilder();
    KTable<String, String> members = builder.table(args[1]);
    KStream<String, String> boards = builder.stream(args[2]);
    boards
        .selectKey((boardId, board) -> memberId(board))
        .join(members, BoardDetailJoin::detail)
        .selectKey((memberId, detail) -> boardId(detail))
        .to(args[3]);

    KafkaStreams streams = new KafkaStreams(builder.build(config), config);
    Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
    streams.start();
  }

  private static String memberId(String board) {
    return read(board).path("member_id").asText();
  }

  private static String boardId(String detail) {
    return read(detail).path("board_id").asText();
  }

  /** The same fields boardstream's board-detail carries (without its provenance columns). */
  static String detail(String board, String member) {
    JsonNode b = read(board);
    JsonNode m = read(member);
    ObjectNode out = JSON.createObjectNode();
    out.set("board_id", b.get("id"));
    out.set("member_id", b.get("member_id"));
    out.set("nickname", m.get("nickname"));
    out.set("city", m.get("city"));
    out.set("phone", m.get("phone"));
    out.set("title", b.get("title"));
    out.set("body", b.get("body"));
    out.set("created_at", b.get("created_at"));
    out.set("modified_at", b.get("modified_at"));
    return out.toString();
  }

  private static JsonNode read(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new IllegalArgumentException("not JSON: " + json, e);
    }
  }
}
