"""What the other layers ask of a game, as protocols: one module per layer that asks.

A game's declaration (:class:`tabled.games.registry.GameDeclaration`) names its parts as
``"module:attribute"``; the layer that needs one loads it with
:func:`tabled.games.registry.part` and reads it through the protocol here. The protocols use
only the contract's types and plain data, so a game's parts import nothing of the pit, the
tools or the simulators, and the table service never loads them.

- :mod:`.pit`: the pit's view of a table of the game (describer, tile/panel, scoreboard).
- :mod:`.integrity`: its integrity rates and calibration groups (docs/integrity.md).
- :mod:`.demo`: its devices and dealing recipe for the demos and simulators, and the console's
  vocabulary.
"""
