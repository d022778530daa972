"""boardstream's Airflow side: hooks (and later operators and the UI page) over the core
package. Airflow puts ``plugins/`` on ``sys.path``, so DAGs import ``boardstream_airflow``."""
