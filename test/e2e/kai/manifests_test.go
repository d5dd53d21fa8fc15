package kai

// The KAI side of the migration, written as a KAI user writes it: nothing here names Sluice.

// kaiPriorityClasses are the classes a KAI install creates.
const kaiPriorityClasses = `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: train}
value: 50
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: build}
value: 100
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference}
value: 125
preemptionPolicy: Never
`

// kaiQueues: a department with three teams. serve runs inference within its quota;
// train is small and weighs double beyond its quota; research has the largest quota.
const kaiQueues = `
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: kai-org}
spec:
  displayName: Department
  resources:
    gpu: {quota: 8, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: kai-serve}
spec:
  parentQueue: kai-org
  priority: 150
  resources:
    gpu: {quota: 3, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: kai-train}
spec:
  parentQueue: kai-org
  resources:
    gpu: {quota: 1, limit: -1, overQuotaWeight: 2}
    cpu: {quota: 8000, limit: -1, overQuotaWeight: 2}
    memory: {quota: 65536, limit: -1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: kai-research}
spec:
  parentQueue: kai-org
  resources:
    gpu: {quota: 4, limit: 6, overQuotaWeight: 1}
`

// The inference pod names KAI's inference class itself; the Deployment names it with
// KAI's label on the workload. Everything runs on the A100 nodes (2 x 4 GPUs).
const servingWorkloads = `
apiVersion: v1
kind: Pod
metadata:
  name: inference
  labels: {kai.scheduler/queue: kai-serve}
spec:
  schedulerName: kai-scheduler
  priorityClassName: inference
  nodeSelector: {sluice.dev/partition: a100}
  containers:
  - name: server
    image: nvcr.io/nvidia/tritonserver:25.01-py3
    resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  labels: {priorityClassName: inference}
spec:
  replicas: 3
  selector: {matchLabels: {app: serve}}
  template:
    metadata:
      labels: {app: serve, kai.scheduler/queue: kai-serve}
    spec:
      schedulerName: kai-scheduler
      nodeSelector: {sluice.dev/partition: a100}
      containers:
      - name: server
        image: nvcr.io/nvidia/tritonserver:25.01-py3
        resources: {limits: {nvidia.com/gpu: 1}}
`

// Training: half a GPU by fraction and half by memory (H100-80GB) on the H100 nodes; on
// the A100 nodes a gang of two pods bound by a KAI PodGroup they name with pod-group-name,
// and one more GPU.
const trainingWorkloads = `
apiVersion: v1
kind: Pod
metadata:
  name: train-solo
  labels: {kai.scheduler/queue: kai-train, priorityClassName: train}
spec:
  schedulerName: kai-scheduler
  nodeSelector: {sluice.dev/partition: a100}
  containers:
  - name: worker
    image: nvcr.io/nvidia/pytorch:25.01-py3
    resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata:
  name: notebook-fraction
  labels: {kai.scheduler/queue: kai-train}
  annotations: {gpu-fraction: "0.5"}
spec:
  schedulerName: kai-scheduler
  nodeSelector: {sluice.dev/partition: h100}
  containers:
  - {name: main, image: nvcr.io/nvidia/pytorch:25.01-py3}
---
apiVersion: v1
kind: Pod
metadata:
  name: notebook-memory
  labels: {kai.scheduler/queue: kai-train}
  annotations: {gpu-memory: "40960"}
spec:
  schedulerName: kai-scheduler
  nodeSelector: {sluice.dev/partition: h100}
  containers:
  - {name: main, image: nvcr.io/nvidia/pytorch:25.01-py3}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: gang}
spec:
  minMember: 2
  queue: kai-train
  priorityClassName: train
---
apiVersion: v1
kind: Pod
metadata:
  name: gang-0
  labels: {kai.scheduler/queue: kai-train, priorityClassName: train}
  annotations: {pod-group-name: gang}
spec:
  schedulerName: kai-scheduler
  nodeSelector: {sluice.dev/partition: a100}
  containers:
  - name: worker
    image: nvcr.io/nvidia/pytorch:25.01-py3
    resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata:
  name: gang-1
  labels: {kai.scheduler/queue: kai-train, priorityClassName: train}
  annotations: {pod-group-name: gang}
spec:
  schedulerName: kai-scheduler
  nodeSelector: {sluice.dev/partition: a100}
  containers:
  - name: worker
    image: nvcr.io/nvidia/pytorch:25.01-py3
    resources: {limits: {nvidia.com/gpu: 1}}
`

// research arrives last, within its quota, and needs GPUs train holds beyond its own.
const researchJob = `
apiVersion: batch/v1
kind: Job
metadata: {name: research}
spec:
  parallelism: 3
  completions: 3
  template:
    metadata:
      labels: {kai.scheduler/queue: kai-research}
    spec:
      schedulerName: kai-scheduler
      restartPolicy: Never
      nodeSelector: {sluice.dev/partition: a100}
      containers:
      - name: train
        image: nvcr.io/nvidia/pytorch:25.01-py3
        resources: {limits: {nvidia.com/gpu: 1}}
`

// badFraction is refused at admission, as Sluice's own pods are.
const badFraction = `
apiVersion: v1
kind: Pod
metadata:
  name: too-much
  labels: {kai.scheduler/queue: kai-train}
  annotations: {gpu-fraction: "1.5"}
spec:
  schedulerName: kai-scheduler
  containers:
  - {name: main, image: busybox}
`

// badKAIPodGroup names a queue no Sluice Queue can be called (not a DNS label): the mirror
// leaves it and says why in an Event on it.
const badKAIPodGroup = `
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: bad-queue}
spec:
  minMember: 1
  queue: Train_Team
`
