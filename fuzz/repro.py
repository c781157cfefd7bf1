"""Decode a config_extreme input: which fields of which seed get which extreme value."""
import json, sys
SEEDS=["quest","quest_usb","linux_usb","hypervisor"]
EXT=[0,1,2,1<<40,(1<<40)+1,1<<63,(1<<63)-1,2**64-1,2**64-2,10**15]
data=open(sys.argv[1],'rb').read()
seed=SEEDS[data[0]%4]; v=json.load(open(f"seeds/{seed}.json"))
slots=[]
def walk(x,path):
    if isinstance(x,bool) or x is None or isinstance(x,str): return
    if isinstance(x,(int,float)): slots.append(path); return
    if isinstance(x,list):
        for i,y in enumerate(x): walk(y,path+[i])
    else:
        for k in sorted(x): walk(x[k],path+[k])
walk(v,[])
def setp(path,val):
    o=v
    for p in path[:-1]: o=o[p]
    o[path[-1]]=val
rest=data[1:]
for i in range(0,len(rest),2):
    at=rest[i]; what=rest[i+1] if i+1<len(rest) else 0
    p=slots[at%len(slots)]; setp(p,EXT[what%len(EXT)]); print(seed, p, EXT[what%len(EXT)])
json.dump(v,open(sys.argv[2],'w'))
