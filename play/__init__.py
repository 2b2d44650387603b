"""The games people play: at the terminal, in the browser, and replays of games, every move judged.

- :mod:`generala_play.terminal`: ``generala play``, a game at the terminal against agents;
- :mod:`generala_play.serve`: ``generala serve``, the browser game (its page is ``page.html``): a
  table of people and agents (:mod:`generala_play.web_table`), the games it keeps
  (:mod:`generala_play.web_games`) and who may ask (:mod:`generala_play.web_guard`);
- :mod:`generala_play.replay`: ``generala replay``, games as one HTML page, every move judged;
- :mod:`generala_play.table`, :mod:`generala_play.moves`, :mod:`generala_play.hints`: the game at
  the table, moves read and described in the game's words, and the advice of the exact solvers.

Installed as ``generala_play`` (the folder ``play/``); it reads the env, the agents, and the
evaluation harness of :mod:`generala_training`.
"""
