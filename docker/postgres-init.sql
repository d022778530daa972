-- Runs once, on the first start of the postgres volume: the board_detail database beside
-- Airflow's metadata database (POSTGRES_DB), owned by the same user.
CREATE DATABASE boardstream;
