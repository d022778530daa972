# The boardstream image: Airflow 3 with Java 17 (spark-submit in client mode), this project and its
# locked runtime dependencies (requirements.txt: no test or lint tools), the Spark Kafka connector jars and the
# join's JVM operator (compiled here against the image's pyspark) baked in, so no job start downloads anything. The same image runs the Spark worker, so driver and Python workers have the
# same Python and libraries (PySpark requires it).

# The connector jars, resolved from the same pom `bin/setup` uses (deps/spark-kafka/pom.xml).
FROM maven:3.9.11-eclipse-temurin-17 AS jars
COPY deps/spark-kafka/pom.xml /deps/spark-kafka/pom.xml
RUN mvn -B -q -f /deps/spark-kafka/pom.xml dependency:copy-dependencies \
        -DoutputDirectory=/jars/spark-kafka

FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jdk-headless procps \
    && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
# The airflow user's directories, made here: every named volume's mount point (Docker
# initialises a new volume from the image's directory, owner included, and one the image lacks is
# root's, which the airflow user cannot write: airflow-init writes the passwords file into
# airflow-auth), and jars/, which a COPY below would otherwise create root's (the classic builder
# chowns what it copies, not the parents it makes) for `boardstream setup` to write into.
RUN mkdir -p /opt/boardstream/var /opt/boardstream/jars /opt/airflow/auth \
    && chown -R airflow: /opt/boardstream /opt/airflow/auth
USER airflow
WORKDIR /opt/boardstream
COPY --chown=airflow:root requirements.txt /opt/boardstream/requirements.txt
# --no-deps: the lock is the whole tree; pip's resolver would otherwise go looking for the
# pyspark-client the Spark provider declares, which the lock leaves out (requirements-overrides.txt).
RUN pip install --no-cache-dir --no-deps --require-hashes -r requirements.txt
COPY --chown=airflow:root pyproject.toml /opt/boardstream/
COPY --chown=airflow:root boardstream /opt/boardstream/boardstream
COPY --chown=airflow:root jobs /opt/boardstream/jobs
COPY --chown=airflow:root dags /opt/boardstream/dags
COPY --chown=airflow:root plugins /opt/boardstream/plugins
RUN pip install --no-cache-dir --no-deps -e /opt/boardstream
RUN python -m boardstream.entrypoints.distribution
COPY --from=jars --chown=airflow:root /jars/spark-kafka /opt/boardstream/jars/spark-kafka
COPY --chown=airflow:root jvm /opt/boardstream/jvm
ENV BOARDSTREAM_VAR_DIR=/opt/boardstream/var \
    BOARDSTREAM_JAR_CACHE=/opt/boardstream/jars \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/boardstream/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/boardstream/plugins \
    AIRFLOW__CORE__LOAD_EXAMPLES=False
# The join's operator, against this image's pyspark (the connector jars are already in place).
RUN boardstream setup --no-fetch
