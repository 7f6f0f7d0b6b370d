# Corral's Slurm command shims (sbatch, srun, squeue, scancel, sacct, scontrol, sinfo, sacctmgr,
# sshare, sprio) at the end of PATH: where Slurm's own commands are installed (slurm-client, in
# /usr/bin) they come first and win; `export PATH=/usr/lib/corral/slurm-shims:$PATH` picks
# Corral's instead.
case ":$PATH:" in
  *:/usr/lib/corral/slurm-shims:*) ;;
  *) PATH="$PATH:/usr/lib/corral/slurm-shims" ;;
esac
