FROM python:3.11-slim
WORKDIR /srv/mcp-console
COPY pyproject.toml README.md ./
COPY app ./app
COPY templates ./templates
COPY static ./static
RUN pip install --no-cache-dir -e .
# Not root: the stdio servers a console starts run as its user, and root could read the console's environment
# (the owner token; in a team, the Redis and PostgreSQL passwords and the team secret) from /proc whatever the
# console does. As `console` they cannot: the console marks itself not dumpable (app/hardening.py).
RUN useradd --system --create-home --home-dir /home/console console \
    && mkdir -p /data && chown console:console /data
USER console
# The console refuses a wildcard bind unless told; inside a container that is the only way to be
# reachable, and docker-compose.yml publishes the port on 127.0.0.1 only.
EXPOSE 8765 8766
CMD ["mcp-console", "serve", "--host", "0.0.0.0", "--dangerously-bind-all-interfaces"]
