package io.boardstream.join;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.RecordComponent;
import java.util.Arrays;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * A record as a state row and back, field by field in declaration order: the state layout's
 * column order is the record's (checked against schema.py's names by {@link MemberJoin}), so no
 * hand-written list of fields can drift from either.
 */
final class RecordRows {
  private RecordRows() {}

  /** The accessors and canonical constructor of each record type, looked up once. */
  private static final ClassValue<Shape> SHAPES =
      new ClassValue<>() {
        @Override
        protected Shape computeValue(Class<?> type) {
          RecordComponent[] components = type.getRecordComponents();
          Method[] accessors =
              Arrays.stream(components).map(RecordComponent::getAccessor).toArray(Method[]::new);
          Class<?>[] types =
              Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new);
          try {
            return new Shape(accessors, type.getDeclaredConstructor(types));
          } catch (NoSuchMethodException e) {
            throw new IllegalStateException(type + " has no canonical constructor", e);
          }
        }
      };

  private record Shape(Method[] accessors, Constructor<?> constructor) {}

  static Row toRow(Record record) {
    Method[] accessors = SHAPES.get(record.getClass()).accessors();
    Object[] values = new Object[accessors.length];
    try {
      for (int i = 0; i < accessors.length; i++) {
        values[i] = accessors[i].invoke(record);
      }
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new IllegalStateException("reading " + record.getClass(), e);
    }
    return RowFactory.create(values);
  }

  /** The record of {@code type} in the first columns of {@code row} (it may have more). */
  static <T extends Record> T fromRow(Class<T> type, Row row) {
    Shape shape = SHAPES.get(type);
    Object[] values = new Object[shape.accessors().length];
    for (int i = 0; i < values.length; i++) {
      values[i] = row.get(i);
    }
    try {
      return type.cast(shape.constructor().newInstance(values));
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("a state row that is not a " + type.getSimpleName(), e);
    }
  }
}
