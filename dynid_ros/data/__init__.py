"""Recorded data: joint-state series, rosbag2 reading, writing, recording and repair, signal processing, and
where outputs may be written.

- :mod:`.joint_states`: :class:`~.joint_states.JointStateSeries`, the in-memory series every tool uses;
- :mod:`.bag_io`: joint states from and to a rosbag2 (MCAP or sqlite3) with rosbags; :mod:`.bag_stream`: a long
  bag read in chunks; :mod:`.joint_state_merge`:
  several publishers merged by joint name; :mod:`.csv_joint_states`: CSV recordings (dVRK);
  :mod:`.wrench_io`: F/T wrenches;
- :mod:`.bag_recorder`, :mod:`.bag_writer_thread`: crash-safe recording; :mod:`.bag_repair`: a new bag beside
  one cut short (the mcap library), never touching the input;
- :mod:`.signal_processing`: resampling, zero-phase filtering, differentiation, decimation; :mod:`.gains_file`:
  per-joint effort scales of ``dynid gains``; :mod:`.bandwidth`: the excitation's bandwidth and the cutoff derived
  from it; :mod:`.effort_delay`: an effort recorded late behind the positions;
- :mod:`.output_paths`: output-directory safety (never overwrite what the tool did not write).

Imports only :mod:`dynid_ros.errors` (no robot model: data are names and numbers).
"""
