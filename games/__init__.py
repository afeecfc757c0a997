"""The games: each one a package of its own, found through the ``tabled.games`` entry points.

A game is a unit (docs/games.md): its rules core (pure: no I/O, no clock, no randomness, every
void and payout naming its article), its regulated options, its exact odds, its policy (which
devices, what losing one means, what it withholds), and the parts the other layers ask of it —
the pit's view and integrity rates, the demo's recipe, the console's vocabulary — all in its own
package, declared once (:class:`tabled.games.registry.GameDeclaration`). The built-in games
(``baccarat``, ``craps``, ``qpoker``) register exactly as an outside game would
(``examples/tabled-sicbo``). Nothing outside a game's package lists the games or branches on
one: the shared code asks :mod:`tabled.games.registry`.

The shared modules here are what every game's rules build on: :mod:`.table` (the ``Table``
protocol and the published body), :mod:`.options` (one parser of options), :mod:`.policy`,
:mod:`.money`, :mod:`.errors` and :mod:`.odds` (the exact-odds model and its rendering).
"""
