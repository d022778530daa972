package io.boardstream.bench;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The benchmark's floor: read every board and write it unchanged, with the same producer
 * settings as the join peers. No parsing, no state, no join.
 *
 * <p>Usage: RawPipe BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC GROUP_ID
 */
public final class RawPipe {
  private RawPipe() {}

  public static void main(String[] args) {
    if (args.length != 4) {
      System.err.println("usage: RawPipe BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC GROUP_ID");
      System.exit(2);
    }
    Properties consumerConfig = Peers.clientConfig(args[0]);
    consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, args[3]);
    consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    Properties producerConfig = Peers.clientConfig(args[0]);
    producerConfig.putAll(Peers.producerSettings());
    AtomicBoolean running = new AtomicBoolean(true);
    try (KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(
                consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(
                producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
      Thread main = Thread.currentThread();
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    running.set(false);
                    consumer.wakeup();
                    try {
                      main.join(10_000);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }));
      consumer.subscribe(List.of(args[1]));
      while (running.get()) {
        try {
          for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
            producer.send(new ProducerRecord<>(args[2], record.key(), record.value()));
          }
        } catch (org.apache.kafka.common.errors.WakeupException e) {
          break;
        }
      }
      producer.flush();
    }
  }
}
