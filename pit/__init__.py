"""The pit: tabled's floor monitor (``tabled pit``).

A floor-level service that subscribes to the tables' MQTT topic trees and shows, keeps and warns:
it records what the tables publish, runs the integrity monitors and serves the live page (the
floor, each table's game panel and scoreboard, recall, alerts). It never talks to a device and never
decides an outcome: the table daemon is the authority (docs/pit.md).

The pit imports the contract (events, outcome records) and the games, never the table daemon.
Outside pit/integrity it knows no game by name: what it shows of a game is the game's pit part
(games/parts/pit.py), asked of the games' registry.
"""
