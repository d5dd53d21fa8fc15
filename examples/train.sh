#!/bin/bash
#SBATCH --job-name=train-demo
#SBATCH --partition=h100
#SBATCH --account=nlp
#SBATCH --nodes=2
#SBATCH --gres=gpu:h100:8
#SBATCH --time=00:30:00
#SBATCH --requeue
#SBATCH --output=train-%j.out
# A two-node, sixteen-GPU job. On the rig, nodes are simulated: the script
# never runs, kwok plays the containers (see test/cluster for the knobs).
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST ($SLURM_NNODES nodes)"
echo "GPUs: $CUDA_VISIBLE_DEVICES"
srun python train.py --epochs 3
