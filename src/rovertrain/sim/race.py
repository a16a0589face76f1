"""A race's own figures: what a track environment scores, beside the lane figures (pure).

CarRacing-v3 pays 1000/N for each of the track's N tiles the car first touches and takes 0.1
for every 20 ms frame; leaving the playfield costs 100 and ends the episode, and so does a
completed lap. `RaceFigures` is one rollout's outcome, `RaceSummary` a controller's mean over
the tracks, `RaceMargin` the policy against a baseline: CarRacing's own figures
(`rollout.OwnFigures`) beside the driving figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ENDINGS = ("time", "lap", "off_playfield")


@dataclass(frozen=True)
class RaceFigures:
    reward: float  # the environment's own reward, summed over the rollout
    tiles_visited: int
    track_tiles: int
    ended: str  # one of ENDINGS

    @property
    def tile_fraction(self) -> float:
        return self.tiles_visited / self.track_tiles if self.track_tiles else 0.0

    def event_fields(self) -> dict[str, object]:
        return {
            "reward": round(self.reward, 2),
            "tilesVisited": self.tiles_visited,
            "trackTiles": self.track_tiles,
            "tileFraction": round(self.tile_fraction, 4),
            "ended": self.ended,
        }

    def own_fields(self) -> dict[str, object]:
        return {"race": self.event_fields()}

    def words(self) -> str:
        return (
            f", reward {self.reward:.0f}, tiles {self.tiles_visited}/{self.track_tiles} "
            f"({self.tile_fraction:.0%}), ended: {self.ended}"
        )


@dataclass(frozen=True)
class RaceSummary:
    """One controller over the tracks: reward and tile share averaged per track."""

    reward: float
    tile_fraction: float
    laps: int
    off_playfield: int

    def event_fields(self) -> dict[str, object]:
        return {
            "reward": round(self.reward, 2),
            "tileFraction": round(self.tile_fraction, 4),
            "laps": self.laps,
            "offPlayfield": self.off_playfield,
        }

    def own_fields(self) -> dict[str, object]:
        return {"race": self.event_fields()}

    def words(self) -> str:
        return f", reward {self.reward:.0f} ({self.tile_fraction:.0%} of the tiles)"


def race_summary(rows: Sequence[RaceFigures]) -> RaceSummary:
    count = max(1, len(rows))
    return RaceSummary(
        reward=sum(row.reward for row in rows) / count,
        tile_fraction=sum(row.tile_fraction for row in rows) / count,
        laps=sum(row.ended == "lap" for row in rows),
        off_playfield=sum(row.ended == "off_playfield" for row in rows),
    )


@dataclass(frozen=True)
class RaceMargin:
    """The policy's mean reward against a baseline's: the difference, and the ratio where the
    baseline earned a positive reward (a ratio to a negative reward means nothing)."""

    reward_difference: float
    reward_ratio: float | None
    tile_fraction: float

    def event_fields(self) -> dict[str, object]:
        ratio = self.reward_ratio
        return {
            "rewardDifference": round(self.reward_difference, 2),
            "rewardRatio": None if ratio is None else round(ratio, 4),
            "tileFraction": round(self.tile_fraction, 4),
        }

    def own_fields(self) -> dict[str, object]:
        return {"race": self.event_fields()}

    def words(self) -> str:
        return "" if self.reward_ratio is None else f" (reward x{self.reward_ratio:.2f})"


def race_margin(policy: RaceSummary, baseline: RaceSummary) -> RaceMargin:
    return RaceMargin(
        reward_difference=policy.reward - baseline.reward,
        reward_ratio=policy.reward / baseline.reward if baseline.reward > 0 else None,
        tile_fraction=policy.tile_fraction - baseline.tile_fraction,
    )
